"""Sign-in for the web page with web_auth cognito: a user pool, its hosted UI and the page's public app client.

People are created by an administrator (no self sign-up) with an immutable ``tenant`` attribute, which reaches the
API as the ID token's ``custom:tenant`` claim. The page signs in with the authorization code grant and PKCE
(enforced by the page: a public client has no secret to keep), and sends the ID token to the JWT API, whose
authorizer checks this pool as issuer and this client as audience.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from infra.api_access import COGNITO_TENANT_CLAIM, WEB_SCOPE, page_oidc
from infra.config import StageConfig
from infra.defaults import removal_policy

TENANT_ATTRIBUTE = COGNITO_TENANT_CLAIM.removeprefix("custom:")


class WebSignIn(Construct):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig, page_url: str) -> None:
        """``page_url``: where the hosted UI returns after sign-in and sign-out (the API's endpoint + "/"); the page
        served from a configured ``cors_origins`` origin (a local development server) may sign in too."""
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        pages = [page_url, *(f"{origin}/" for origin in config.cors_origins)]
        self.user_pool = cognito.UserPool(
            self,
            "Users",
            user_pool_name=f"meeting-rag-{config.name}",
            self_sign_up_enabled=False,  # an administrator creates each person with their tenant
            sign_in_aliases=cognito.SignInAliases(email=True),
            auto_verify=cognito.AutoVerifiedAttrs(email=True),
            custom_attributes={TENANT_ATTRIBUTE: cognito.StringAttribute(min_len=1, max_len=128, mutable=False)},
            mfa=cognito.Mfa.REQUIRED,  # an authenticator app (TOTP), set up at the first sign-in
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=cdk.Duration.days(3),
            ),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            # Plus: threat protection blocks compromised credentials and risky sign-ins (cdk-nag COG8).
            feature_plan=cognito.FeaturePlan.PLUS,
            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION,
            deletion_protection=config.db_deletion_protection,
            removal_policy=removal_policy(config),
        )
        prefix = config.web_domain_prefix or f"meeting-rag-{config.name}-{stack.account}"
        self.domain = self.user_pool.add_domain("HostedUi", cognito_domain=cognito.CognitoDomainOptions(domain_prefix=prefix))
        self.client = self.user_pool.add_client(
            "Web",
            user_pool_client_name="web-page",
            generate_secret=False,  # a browser keeps no secret: authorization code with PKCE
            auth_flows=cognito.AuthFlow(user_srp=True),
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=[cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
                callback_urls=pages,
                logout_urls=pages,
            ),
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
            read_attributes=cognito.ClientAttributes()
            .with_standard_attributes(email=True, email_verified=True)
            .with_custom_attributes(TENANT_ATTRIBUTE),
            write_attributes=cognito.ClientAttributes().with_standard_attributes(email=True),
            prevent_user_existence_errors=True,
            enable_token_revocation=True,
            id_token_validity=cdk.Duration.hours(1),
            access_token_validity=cdk.Duration.hours(1),
            refresh_token_validity=cdk.Duration.hours(12),
        )
        # The issuer of the pool's tokens (the pool's ProviderURL attribute lacks the scheme).
        self.issuer = f"https://cognito-idp.{stack.region}.{stack.url_suffix}/{self.user_pool.user_pool_id}"
        self.audience = self.client.user_pool_client_id

    @property
    def environment(self) -> dict[str, str]:
        """``RAG_WEB_AUTH`` and ``RAG_WEB_OIDC`` of the query function: the hosted UI's endpoints and the client id."""
        base = self.domain.base_url()
        page = page_oidc(
            client_id=self.client.user_pool_client_id,
            authorization_endpoint=f"{base}/oauth2/authorize",
            token_endpoint=f"{base}/oauth2/token",
            scope=WEB_SCOPE,
            logout_endpoint=f"{base}/logout",
        )
        return {"RAG_WEB_AUTH": "oidc", "RAG_WEB_OIDC": cdk.Stack.of(self).to_json_string(page)}
