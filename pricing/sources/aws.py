"""Where :mod:`spotwise.pricing.clouds.aws.spot_prices` was: kept for ``policy/bids.py``'s
import until it reads the AWS price-history reader from AWS's folder (docs/clouds.md)."""

from spotwise.pricing.clouds.aws.spot_prices import read_price_history_csv

__all__ = ["read_price_history_csv"]
