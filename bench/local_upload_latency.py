"""What write-through costs a local upload: PutObject latency against `rag up`'s moto server, with and without it.

    .venv/bin/python bench/local_upload_latency.py [--puts 200] [--rounds 5] [--size 2048]

Two servers run side by side, each in a process of its own as in `rag up`: ``rag_local.moto_server``
with each S3 write mirrored to disk before it is acknowledged (``durable.write_through``, what
`rag up` runs), and the same gate without it (every write in moto's memory only). One client puts
--puts objects of --size bytes into each, sequentially, alternating the servers for --rounds rounds
so both see the same machine; it prints ms per PUT (mean, p50, p95) for each.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUCKET = "bench-bucket"


def serve(port: int, mirror_dir: str | None) -> None:
    """A child process: the server, until stdin closes."""
    import logging

    import boto3

    from rag_local.durable import write_through
    from rag_local.mirror import Mirror
    from rag_local.moto_server import MotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # (an access log line per request, as in `rag up`)
    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    hook = write_through(s3, Mirror(Path(mirror_dir), BUCKET)) if mirror_dir else None
    server = MotoServer(port, on_s3_write=hook)
    server.start()
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    print("ready", flush=True)
    sys.stdin.read()
    server.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(mirror_dir: str | None) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    args = [sys.executable, __file__, "--serve", str(port)] + (["--mirror", mirror_dir] if mirror_dir else [])
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process, port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mirror", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.mirror)

    import boto3

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    body = (b"Maya: We ship the remote in March.\n" * (args.size // 35 + 1))[: args.size]
    with tempfile.TemporaryDirectory() as mirror_dir:
        servers = {"memory only": start(None), "write-through": start(mirror_dir)}
        try:
            clients = {
                name: boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{port}")
                for name, (_, port) in servers.items()
            }
            for s3 in clients.values():  # warm: connection, first-request paths
                for i in range(20):
                    s3.put_object(Bucket=BUCKET, Key=f"projects/bench/warm {i}.txt", Body=body)
            timings: dict[str, list[float]] = {name: [] for name in clients}
            for round_ in range(args.rounds):
                for name in sorted(clients, reverse=round_ % 2 == 1):
                    for i in range(args.puts):
                        started = time.perf_counter()
                        clients[name].put_object(Bucket=BUCKET, Key=f"projects/bench/r{round_} {i:04d}.txt", Body=body)
                        timings[name].append((time.perf_counter() - started) * 1000)
        finally:
            for process, _ in servers.values():
                assert process.stdin is not None
                process.stdin.close()
                process.wait(30)
        mirrored = len(list(Path(mirror_dir, BUCKET).glob("*.obj")))
    print(f"{args.rounds} rounds x {args.puts} PUTs of {args.size} bytes per server, alternating; one client, sequential")
    for name, values in timings.items():
        ordered = sorted(values)
        p95 = ordered[int(0.95 * (len(ordered) - 1))]
        print(f"{name:14} mean {statistics.mean(values):6.2f} ms  p50 {statistics.median(values):6.2f} ms  p95 {p95:6.2f} ms")
    cost = statistics.median(timings["write-through"]) - statistics.median(timings["memory only"])
    print(f"write-through costs {cost:.2f} ms per PUT at the median ({mirrored} objects on disk)")


if __name__ == "__main__":
    main()
