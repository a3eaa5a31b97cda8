from tests.executor.conftest import metadata

__all__ = ["metadata"]
