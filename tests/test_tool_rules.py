"""Every tool governed by default in the kernel core: ToolRulesPolicy in a real GovernanceKernel.

A tool no rule names, an argument its rule does not declare and a value that cannot be read are
blocked, each with a reason that says how to allow it; shell, file and HTTP tools are governed by
patterns, path roots (``..`` and symbolic links resolved) and URL hosts.
"""

from __future__ import annotations

import os

import pytest

from agentlightning.contrib.kernel.agentos import GovernanceConfigError, GovernanceKernel, SQLPolicy


def rules_kernel(tmp_path, **extra):
    from agentlightning.contrib.kernel.agentos import ToolRulesPolicy

    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    rules = ToolRulesPolicy(
        {
            "run_sql": {"args": {"query": {"type": "str"}}},
            "bash": {"args": {"cmd": {"type": "str", "pattern": r"(ls|cat|grep)( [\w./-]+)*", "max_length": 200}}},
            "write_file": {
                "args": {
                    "path": {"type": "path", "roots": [str(work)], "required": True},
                    "content": {"type": "str", "max_length": 1000},
                }
            },
            "http_post": {
                "args": {
                    "url": {"type": "url", "hosts": ["api.example.com", ".internal.example.com"], "ports": [8443]},
                    "body": {"type": "object", "fields": {"n": {"type": "int", "min": 0, "max": 10}}},
                }
            },
            "search": {"args": {"q": {"type": "str"}}, "undeclared_args": "allow"},
            **extra,
        }
    )
    return GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"]), rules], recorder=tmp_path / "audit.db"), work


def test_a_tool_no_rule_names_is_blocked_with_how_to_allow_it(tmp_path):
    kernel, _ = rules_kernel(tmp_path)
    decision = kernel.check("send_email", {"to": "a@b.c"})
    assert decision.blocked
    (violation,) = decision.violations
    assert violation.policy_name == "ToolRulesPolicy"
    assert "has no rule" in violation.description and "default deny" in violation.description
    assert "to allow it, add a rule" in violation.description
    assert kernel.check("Run-SQL", {"query": "SELECT 1"}).allowed  # names compare as tool_key
    assert kernel.check("run_sql", {"query": "DROP TABLE users"}).blocked  # the SQL guard still judges it
    assert kernel.verify_audit()["valid"] is True


@pytest.mark.parametrize(
    "cmd, allowed",
    [
        ("ls -la work", True),
        ("cat notes.txt", True),
        ("rm -rf /data", False),
        ("ls; rm -rf /", False),
        ("ls $(rm -rf /)", False),
        ("ls\nrm -rf /", False),
        ("ls " + "a" * 300, False),
    ],
)
def test_a_shell_tool_runs_only_what_its_pattern_allows_whole(tmp_path, cmd, allowed):
    kernel, _ = rules_kernel(tmp_path)
    assert kernel.check("bash", {"cmd": cmd}).allowed is allowed


def test_a_file_tool_stays_under_its_roots_after_dotdot_and_symlinks(tmp_path):
    kernel, work = rules_kernel(tmp_path)
    assert kernel.check("write_file", {"path": str(work / "out.txt"), "content": "x"}).allowed
    assert kernel.check("write_file", {"path": str(work / "sub" / ".." / "out.txt"), "content": "x"}).allowed
    escape = kernel.check("write_file", {"path": f"{work}/../../etc/passwd", "content": "x"})
    assert escape.blocked and "outside the allowed roots" in escape.reason
    (work / "link").symlink_to("/etc")
    via_link = kernel.check("write_file", {"path": str(work / "link" / "passwd"), "content": "x"})
    assert via_link.blocked and "resolves to '/etc/passwd'" in via_link.reason
    sibling = tmp_path / "work-other"  # a prefix of the root's name is not the root
    assert kernel.check("write_file", {"path": str(sibling / "x"), "content": "x"}).blocked
    relative = kernel.check("write_file", {"path": "out.txt", "content": "x"})
    assert relative.blocked and "add base:" in relative.reason
    assert kernel.check("write_file", {"path": "~/.bashrc", "content": "x"}).blocked
    assert kernel.check("write_file", {"path": str(work / "a\x00b"), "content": "x"}).blocked
    missing = kernel.check("write_file", {"content": "x"})
    assert missing.blocked and "'path' is required and missing" in missing.reason


def test_a_path_rule_is_judged_afresh_each_time_a_symlink_can_change(tmp_path):
    kernel, work = rules_kernel(tmp_path)
    target = work / "data"
    target.mkdir()
    args = {"path": str(work / "data" / "f.txt"), "content": "x"}
    assert kernel.check("write_file", args).allowed
    target.rmdir()
    target.symlink_to("/etc")  # the same call, now pointing out of the root
    assert kernel.check("write_file", args).blocked


@pytest.mark.parametrize(
    "url, allowed, reason",
    [
        ("https://api.example.com/v1/x", True, None),
        ("https://API.Example.com./v1", True, None),
        ("https://a.internal.example.com/x", True, None),
        ("https://api.example.com:8443/x", True, None),
        ("https://evil.example.net/x", False, "not an allowed host"),
        ("https://api.example.com.evil.net/x", False, "not an allowed host"),
        ("https://api.example.com@evil.net/x", False, "user information"),
        ("https://evil.net\\@api.example.com/", False, "backslash"),
        ("http://api.example.com/x", False, "not an allowed scheme"),
        ("https://api.example.com:9000/x", False, "not an allowed port"),
        ("file:///etc/passwd", False, "has no host"),
        ("https://internal.example.com.attacker/x", False, "not an allowed host"),
    ],
)
def test_an_http_tool_reaches_only_its_hosts(tmp_path, url, allowed, reason):
    kernel, _ = rules_kernel(tmp_path)
    decision = kernel.check("http_post", {"url": url, "body": {"n": 1}})
    assert decision.allowed is allowed, decision.reason
    if reason:
        assert reason in decision.reason


def test_undeclared_arguments_and_fields_are_blocked_unless_the_rule_allows_them(tmp_path):
    kernel, _ = rules_kernel(tmp_path)
    extra = kernel.check("bash", {"cmd": "ls", "env": {"LD_PRELOAD": "/tmp/x.so"}})
    assert extra.blocked and "argument 'env' is not declared by the rule" in extra.reason
    assert "undeclared_args: allow" in extra.reason
    field = kernel.check("http_post", {"url": "https://api.example.com", "body": {"n": 1, "cmd": "x"}})
    assert field.blocked and "field 'body.cmd' is not declared" in field.reason
    assert kernel.check("search", {"q": "shoes", "page": 2}).allowed  # the rule says undeclared_args: allow


@pytest.mark.parametrize(
    "body, problem",
    [
        ({"n": True}, "must be of type int"),
        ({"n": 11}, "above the maximum"),
        ({"n": -1}, "below the minimum"),
        ({"n": "3"}, "must be of type int"),
        ("n=3", "must be of type object"),
    ],
)
def test_values_that_cannot_be_read_as_their_rule_says_are_blocked(tmp_path, body, problem):
    kernel, _ = rules_kernel(tmp_path)
    decision = kernel.check("http_post", {"url": "https://api.example.com", "body": body})
    assert decision.blocked and problem in decision.reason


@pytest.mark.parametrize(
    "rules, message",
    [
        ({}, "needs tools"),
        ({"bash": {"args": {"cmd": {}}}}, "type is required"),
        ({"bash": {"args": {"cmd": {"type": "str", "roots": ["/tmp"]}}}}, "roots applies to types ['path']"),
        ({"bash": {"args": {"cmd": {"type": "str", "pattern": "("}}}}, "is not a regular expression"),
        ({"bash": {"argz": {}}}, "unknown key(s) ['argz']"),
        ({"f": {"args": {"p": {"type": "path", "roots": ["relative/dir"]}}}}, "must be absolute"),
        ({"h": {"args": {"u": {"type": "url", "hosts": ["https://x.com"]}}}}, "is not a host name"),
        ({"n": {"args": {"x": {"type": "int", "min": 5, "max": 1}}}}, "min 5 is above max 1"),
        ({"a": {}, "A": {}}, "the same tool as 'a'"),
        ({"h": {"args": {"u": {"type": "url", "hosts": ["a.com"], "base": "/x"}}}}, "base refines roots"),
        ({"h": {"args": {"u": {"type": "url"}}}}, "a url argument names where it may point (hosts: [...])"),
        ({"f": {"args": {"p": {"type": "path"}}}}, "a path argument names where it may point (roots: [...])"),
    ],
)
def test_a_bad_rule_is_a_clear_error_at_construction(rules, message):
    from agentlightning.contrib.kernel.agentos import ToolRulesPolicy

    with pytest.raises(GovernanceConfigError) as error:
        ToolRulesPolicy(rules)
    assert message in str(error.value)


def test_a_pattern_that_would_backtrack_for_ever_in_python_is_matched_in_linear_time():
    from agentlightning.contrib.kernel.agentos import ToolRulesPolicy

    policy = ToolRulesPolicy({"echo": {"args": {"text": {"type": "str", "pattern": "(a+)+b"}}}})
    kernel = GovernanceKernel([policy], policy_timeout_s=0.5)
    decision = kernel.check("echo", {"text": "a" * 100_000})  # Python's re would never return
    assert decision.blocked and "does not match the pattern" in decision.reason
    with pytest.raises(GovernanceConfigError, match="RE2 has no backreferences"):
        ToolRulesPolicy({"echo": {"args": {"text": {"type": "str", "pattern": r"(a)\1"}}}})


def test_the_same_policy_works_beside_the_reference_tutorials_policies():
    from agentlightning.contrib.kernel.agentos import CostControlPolicy, ToolRulesPolicy
    from agentlightning.contrib.kernel.agentos import GovernanceKernel as KernelSpace

    kernel = KernelSpace(
        policy=[
            SQLPolicy(deny=["DROP", "DELETE"]),
            CostControlPolicy(max_cost_usd=100),
            ToolRulesPolicy({"database_query": {"args": {"query": {"type": "str"}}}}),
        ]
    )
    assert kernel.check("database_query", {"query": "SELECT 1"}).allowed
    assert kernel.check("shell", {"cmd": "rm -rf /"}).blocked
    assert os.sep == "/"  # the path rules are POSIX paths


def test_numbers_are_read_exactly_and_nan_is_not_a_number():
    from agentlightning.contrib.kernel.agentos import ToolRulesPolicy

    kernel = GovernanceKernel([ToolRulesPolicy({"pay": {"args": {"amount": {"type": "number", "max": 100}}}})])
    assert kernel.check("pay", {"amount": 99.5}).allowed
    huge = kernel.check("pay", {"amount": 10**400})
    assert huge.blocked and "above the maximum 100" in huge.reason
    nan = kernel.check("pay", {"amount": float("nan")})
    assert nan.blocked and "must be of type number" in nan.reason
    assert kernel.check("pay", {"amount": True}).blocked  # a bool is not a number here
