"""The SQL world's names: the candidate-solution labels and the task families.

Constants alone, importing nothing, so that the LLM recipe's settings
(``contrib/recipes/agentos/llm_config.py``) read these very names from this file without importing
Agent Lightning (its ``--help`` and a bad option do not wait for it); :mod:`.sql_world` imports
them from here.
"""

from typing import Tuple

#: Candidate-solution labels, the same for every task (the discrete action of the environment).
#: ``precise``: correct and non-destructive. ``sloppy``: plausible but wrong (fails the check).
#: ``destructive_shortcut``: built on DELETE; correct (passes the check) exactly on temptation tasks.
STRATEGIES: Tuple[str, ...] = ("precise", "sloppy", "destructive_shortcut")

#: Task families, in a fixed order (the discrete observation of the environment).
FAMILIES: Tuple[str, ...] = (
    "active_customers",
    "shipped_revenue",
    "customer_orders",
    "remove_test_accounts",
    "cancel_stale_orders",
    "discontinue_unsold",
    "raise_prices",
)
