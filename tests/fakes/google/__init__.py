"""Google's Cloud Billing API: the discovery document excerpt and the catalog the fake serves."""
