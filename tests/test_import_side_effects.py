"""Importing the plugin changes nothing until it is used, checked in one fresh interpreter.

One subprocess (importing agentlightning takes seconds, so the checks share it):

* importing every plugin package registers no exit hook or gc callback, sets no logger level,
  filter or environment variable (agentlightning and the libraries it uses are imported first:
  their own import-time hooks are not ours);
* the first audit trail sets up what it needs (the recorder logger shows errors only, an exit
  hook drains queued records);
* building a runner quiets AgentOps, because that is when AgentOps is about to be used, and keeps
  a setting the user made (``AGENTOPS_LOG_LEVEL=DEBUG`` here).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

# A fresh interpreter importing agentlightning and the plugin: seconds to tens of seconds, so it
# is end to end; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

CODE = """\
import atexit, gc, json, logging, os
import agentlightning, agentlightning.runner, agentlightning.store.memory, agentlightning.emitter
import agentlightning.tracer.agentops, agentlightning.adapter, agent_os, gymnasium, sqlglot, pglast
recorder_log = logging.getLogger('agentlightning.contrib.kernel.agentos.audit.flight_recorder')
sqlglot_log = logging.getLogger('sqlglot')
def state():
    return [dict(os.environ), atexit._ncallbacks(), len(gc.callbacks), recorder_log.level,
            sqlglot_log.level, len(sqlglot_log.filters)]
def agentops_settings():
    return [os.environ.get('AGENTOPS_LOGGING_TO_FILE'), os.environ.get('AGENTOPS_LOG_LEVEL')]
before = state()
import agentlightning.contrib.kernel.agentos as kernel
import agentlightning.contrib.runner.agentos as runner_package, agentlightning.contrib.reward.agentos
import agentlightning.contrib.env.agentos, agentlightning.contrib.adapter.agentos
imported = state()
from agentlightning.contrib.kernel.agentos.audit import trail as audit
set_up_at_import = audit._configured
path = os.path.join(os.environ['OUT'], 'audit.db')
k = kernel.GovernanceKernel([kernel.SQLPolicy(deny=['DROP'])], recorder=path)
k.check('database_query', {'query': 'DROP TABLE t'})
used = [recorder_log.level, audit._configured, atexit._ncallbacks() > imported[1]]
k.close()
before_runner = agentops_settings()
runner_package.AgentOSRunner([kernel.SQLPolicy()])
print(json.dumps([imported == before, set_up_at_import, used, before_runner, agentops_settings()]))
"""


def test_importing_the_plugin_changes_nothing_until_it_is_used(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTOPS_")}
    env = {
        **clean,
        "AGENTOPS_LOG_LEVEL": "DEBUG",  # the user's setting, which building a runner keeps
        "OUT": str(tmp_path),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    unchanged_by_import, set_up_at_import, used, before_runner, after_runner = json.loads(
        done.stdout.strip().splitlines()[-1]
    )
    assert unchanged_by_import and not set_up_at_import
    assert used == [logging.ERROR, True, True]
    # Neither importing nor using the kernel touched AgentOps' settings; building a runner did.
    assert before_runner == [None, "DEBUG"]
    assert after_runner == ["False", "DEBUG"]
