"""Request and response models of the query API, by route family; the OpenAPI document is generated from them."""
