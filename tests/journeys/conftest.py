"""A stranger's machine: a fresh store in a folder of their own, their own training script
written from the README (not the bundled example), and `spotwise` typed as a shell would run
it. Each journey asserts what the user sees: the command's output, its exit code, the files
it leaves."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pricing.conftest import us_east_1_history  # noqa: F401  (the real price history)

# The README's guard snippet, filled in as a user would: their own model, data and loop, the
# checkpoint folder from the command line, and the final weights written where they ask.
STRANGER_SCRIPT = textwrap.dedent(
    '''
    """My own training: a small regression, guarded as the README shows."""
    import hashlib
    import sys
    import time

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from spotwise.executor import guard

    ckpt, out = sys.argv[1], sys.argv[2]
    torch.manual_seed(7)
    data = TensorDataset(torch.randn(512, 8), torch.randn(512, 1))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.5)

    with guard([ckpt], model=model, optimizer=opt, scheduler=sched, loader=loader, epochs=4) as g:
        for x, y in g.batches():
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            sched.step()
            g.step()
            time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0.0)

    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    open(out, "w").write(hashlib.sha256(weights).hexdigest())
    print("my training is done")
    '''
)


@dataclass(frozen=True, slots=True)
class Stranger:
    """The folder a stranger works in, their store, and their shell."""

    home: Path
    store: Path
    env: dict[str, str]

    @property
    def script(self) -> Path:
        return self.home / "my_train.py"

    def spotwise(
        self, *args: str, timeout: float = 300, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``spotwise ARGS`` in their folder, as typed."""
        return subprocess.run(
            [sys.executable, "-m", "spotwise", *args],
            cwd=self.home,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """``spotwise ARGS &``: in its own process group, output to pipes."""
        return subprocess.Popen(
            [sys.executable, "-m", "spotwise", *args],
            cwd=self.home,
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )


@pytest.fixture
def stranger(tmp_path: Path) -> Stranger:
    home = tmp_path / "stranger"
    home.mkdir()
    (home / "my_train.py").write_text(STRANGER_SCRIPT)
    store = home / "spotwise.duckdb"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SPOTWISE_")},
        "SPOTWISE_STORE": str(store),
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    return Stranger(home=home, store=store, env=env)
