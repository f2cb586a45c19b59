#!/usr/bin/env python3
"""Runs the bypass corpus (cases.py) through `sandshim hook --agent claude` in each hook.mode.

For every attempt and mode: a fresh HOME (sandshim config, shims) and git workspace (fixtures), the
attempt sent as Claude Code's PreToolUse payload, the answer applied as Claude Code applies it (deny:
nothing runs; updatedInput: that command runs; silence or allow: the command as written runs), with
the shim directory first on PATH as sandshim's SessionStart hook puts it. What ran is classified:

  refused    the hook denied it; nothing ran
  sandboxed  no marker on the host, and sandshim's audit holds a run (it ran in a container)
  escaped    a marker appeared on the host, or a file the sandbox depends on changed
  limit      escaped, and limits.txt lists it for this mode (a documented limit of that mode)
  inert      allowed, ran, left no marker and no run: the test cannot tell, so it fails

Each attempt also runs once with no hook and no shims on PATH (the control), to prove that its
payload does escape when nothing stops it. Exit status: 0 when no mode has an escape outside
limits.txt, no inert attempt, and wrap mode has no escape at all; 1 otherwise; 77 when no engine
(outside CI).
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import cases  # noqa: E402

MODES = ("path", "deny", "wrap")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
EXIT_SKIP = 77
OUTCOMES = ("sandboxed", "refused", "limit", "escaped", "inert")
PERL = "/usr/bin/perl -e 'open F,\">@M@\"'"
# The agent's shell start-up files: a line there runs on the host in a later session.
STARTUP_FILES = (".bashrc", ".profile", ".bash_profile", ".bash_login", ".zshenv", ".zprofile")

# Workspace fixtures: name -> (mode bits, text). @M@ is the attempt's marker.
FIXTURES = {
    "x.py": (0o644, 'open("@M@", "w")\n'),
    "x.pl": (0o644, 'open F, ">@M@";\n'),
    "payload.txt": (0o644, PERL + "\n"),
    "script.sh": (0o755, "#!/bin/bash\n" + PERL + "\n"),
    "noshebang.sh": (0o755, PERL + "\n"),
    "tool311": (0o755, '#!/usr/bin/env python3.11\nopen("@M@", "w")\n'),
    "toolSu": (0o755, '#!/usr/bin/env -S -u PATH python3\nopen("@M@", "w")\n'),
    "toolSP": (0o755, '#!/usr/bin/env -S PATH=/usr/bin python3\nopen("@M@", "w")\n'),
    "tooli": (0o755, '#!/usr/bin/env -i python3\nopen("@M@", "w")\n'),
    "toolpy": (0o755, '#!/usr/bin/python3\nopen("@M@", "w")\n'),
    "toolsp": (0o755, '#! /usr/bin/python3\nopen("@M@", "w")\n'),
    "toolpl": (0o755, '#!/usr/bin/env perl\nopen F, ">@M@";\n'),
    "toolperl": (0o755, '#!/usr/bin/perl\nopen F, ">@M@";\n'),
    "toolmytool": (0o755, '#!bin/mytool\nopen F, ">@M@";\n'),
    "evalpy.sh": (0o755, "#!/bin/sh\neval \"/usr/bin/python3 -c 'open(\\\"@M@\\\", \\\"w\\\")'\"\n"),
    "pathpy.sh": (0o755, "#!/bin/sh\nPATH=/usr/bin:/bin\npython3 -c 'open(\"@M@\", \"w\")'\n"),
    "pathsh.sh": (0o755, "#!/bin/sh\nexport PATH=/usr/bin\nsh -c \"python3 -c 'open(\\\"@M@\\\", \\\"w\\\")'\"\n"),
    "setpath.sh": (0o644, "PATH=/usr/bin:/bin\n"),
    "sourcepath.sh": (0o755, "#!/bin/sh\n. ./setpath.sh\npython3 -c 'open(\"@M@\", \"w\")'\n"),
    "sandshim": (0o755, "#!/bin/sh\n" + PERL + "\n"),
    "Makefile": (0o644, "all:\n\t" + PERL.replace("$", "$$") + "\n"),
    ".sandshim.conf": (0o644, "# this workspace's policy\n"),
    ".claude/settings.json": (0o644, "{}\n"),
}
LINKS = {"bin/mytool": "/usr/bin/perl", "bin/py": "/usr/bin/python3"}


def log(message):
    print(f"bypass: {message}", file=sys.stderr, flush=True)


def expand(text, ctx):
    for key, value in (
        ("@PLQ@", "-e \"open F,q(>@M@)\""),
        ("@PFN@", "perl @WS@/x.pl"),
        ("@PF@", "/usr/bin/perl @WS@/x.pl"),
        ("@PL@", "-e 'open F,\">@M@\"'"),
        ("@PY@", "-c 'open(\"@M@\",\"w\")'"),
        ("@JS@", "-e 'require(\"fs\").writeFileSync(\"@M@\",\"\")'"),
        ("@MW@", ctx["marker_ws"]),
        ("@WS@", str(ctx["ws"])),
        ("@M@", ctx["marker"]),
        ("@SHIM@", ctx["shim_dir"]),
        ("@SANDSHIM@", ctx["sandshim"]),
        ("@SYS@", ctx["sys"]),
    ):
        text = text.replace(key, value)
    return text


class Corpus:
    def __init__(self, args):
        self.engine = args.engine
        self.root = Path(tempfile.mkdtemp(prefix="sandshim-bypass."))
        os.chmod(self.root, 0o755)
        # A copy: a rebuild of the tree's binary during the run must not change what is tested.
        self.sandshim = str(self.root / "sandshim")
        shutil.copy2(Path(args.sandshim).resolve(), self.sandshim)
        self.markers = self.root / "markers"
        self.markers.mkdir()
        os.chmod(self.markers, 0o777)
        self.bin = self.root / "bin"  # `sandshim` by name, as an installed one would be
        self.bin.mkdir()
        (self.bin / "sandshim").symlink_to(self.sandshim)
        self.limits = self.read_limits()
        self.templates = {}

    @staticmethod
    def read_limits():
        limits = {}
        for line in (HERE / "limits.txt").read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                mode, attempt_id, anchor = line.split()
                limits[(mode, attempt_id)] = anchor
        return limits

    def environment(self, home, hooked):
        shim_dir = home / ".local/share/sandshim/bin"
        path = (f"{shim_dir}:" if hooked else "") + f"{SYSTEM_PATH}:{self.bin}"
        return {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "PATH": path,
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "USER": os.environ.get("USER", "root"),
            "TERM": "dumb",
        }

    # One HOME per mode with the user config and the shims installed; copied per attempt.
    def template(self, mode):
        if mode in self.templates:
            return self.templates[mode]
        home = self.root / f"home-{mode}"
        (home / ".config/sandshim").mkdir(parents=True)
        (home / ".local/state/sandshim").mkdir(parents=True)
        (home / ".ssh").mkdir()
        (home / ".ssh/id_rsa").write_text("SECRET\n")
        (home / ".claude").mkdir()
        (home / ".claude/settings.json").write_text("{}\n")
        hook_mode = "path" if mode == "control" else mode
        (home / ".config/sandshim/config").write_text(
            f"[engine]\nname = {self.engine}\n\n[hook]\nmode = {hook_mode}\n"
        )
        subprocess.run(
            [self.sandshim, "install"],
            env=self.environment(home, True),
            cwd=home,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.templates[mode] = home
        return home

    def prepare(self, mode, attempt):
        case = self.root / mode / attempt["id"]
        home = case / "home"
        shutil.copytree(self.template(mode), home, symlinks=True)
        ws = case / "ws"
        ws.mkdir(parents=True)
        os.chmod(case, 0o755)
        os.chmod(ws, 0o755)
        ctx = {
            "marker": str(self.markers / f"{mode}.{attempt['id']}"),
            "marker_ws": str(ws / ".marker"),
            "shim_dir": str(home / ".local/share/sandshim/bin"),
            "sandshim": self.sandshim,
            "sys": str(case / "sys"),
            "home": home,
            "ws": ws,
        }
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        # A system-like script anyone in its group may rewrite: followed, not a system program.
        (case / "sys").mkdir()
        os.chmod(case / "sys", 0o755)
        (case / "sys/evaltool").write_text('#!/bin/sh\neval "$1"\n')
        os.chmod(case / "sys/evaltool", 0o775)
        for name, (bits, text) in FIXTURES.items():
            file = ws / name
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(expand(text, ctx))
            os.chmod(file, bits)
        for name, target in LINKS.items():
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            (ws / name).symlink_to(target)
        if attempt["class"] == "venv":
            subprocess.run(
                ["/usr/bin/python3", "-m", "venv", "--without-pip", str(ws / ".venv")],
                check=True,
            )
            (ws / "x").mkdir()
            (ws / "x/__main__.py").write_text(expand('open("@M@", "w")\n', ctx))
        ctx["command"] = expand(attempt["command"], ctx)
        return ctx

    # What the sandbox depends on, as one value: it must be the same after the attempt.
    @staticmethod
    def fingerprint(ctx):
        home, ws = ctx["home"], ctx["ws"]
        digest = hashlib.sha256()
        files = [
            home / ".config/sandshim/config",
            home / ".claude/settings.json",
            ws / ".sandshim.conf",
            ws / ".git/config",
            home / ".codex/config.toml",
            home / ".gemini/settings.json",
            home / ".config/fish/config.fish",
        ]
        files += [home / name for name in STARTUP_FILES]
        files += sorted((ws / ".git/hooks").glob("*")) + sorted((ws / ".claude").glob("*"))
        for file in files:
            digest.update(str(file).encode())
            digest.update(file.read_bytes() if file.is_file() else b"<absent>")
        shim_dir = Path(ctx["shim_dir"])
        for entry in sorted(shim_dir.iterdir()) if shim_dir.is_dir() else []:
            target = os.readlink(entry) if entry.is_symlink() else "<file>"
            digest.update(f"{entry.name}->{target}".encode())
        db = home / ".local/state/sandshim/audit.db"
        digest.update(str(db.stat().st_ino if db.exists() else "<absent>").encode())
        return digest.hexdigest()

    @staticmethod
    def run_rows(ctx):
        db = ctx["home"] / ".local/state/sandshim/audit.db"
        if not db.exists():
            return 0
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                return conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        except sqlite3.Error:
            return 0

    def ask_hook(self, ctx, attempt):
        payload = {
            "session_id": "bypass-corpus",
            "transcript_path": "/tmp/transcript.jsonl",
            "cwd": str(ctx["ws"]),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": ctx["command"], "description": attempt["id"]},
            "tool_use_id": "toolu_" + attempt["id"],
        }
        result = subprocess.run(
            [self.sandshim, "hook", "--agent", "claude"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=ctx["ws"],
            env=self.environment(ctx["home"], True),
            timeout=60,
        )
        return answer_of(result, ctx["command"])

    def execute(self, ctx, command, hooked):
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=ctx["ws"],
            env=self.environment(ctx["home"], hooked),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        return output.decode(errors="replace")

    def escaped(self, ctx, before):
        return (
            Path(ctx["marker"]).exists()
            or Path(ctx["marker_ws"]).exists()
            or self.fingerprint(ctx) != before
        )

    def attempt(self, mode, attempt):
        ctx = self.prepare(mode, attempt)
        started = time.monotonic()
        record = {"mode": mode, "id": attempt["id"], "class": attempt["class"]}
        if mode == "control":
            before = self.fingerprint(ctx)
            record["output"] = self.execute(ctx, ctx["command"], False)
            record["outcome"] = "escaped" if self.escaped(ctx, before) else "inert"
        else:
            verdict, to_run, reason = self.ask_hook(ctx, attempt)
            record.update(verdict=verdict, reason=reason)
            if verdict == "deny":
                record["outcome"] = "refused"
            else:
                before = self.fingerprint(ctx)
                record["output"] = self.execute(ctx, to_run, True)
                record["outcome"] = self.classify(mode, attempt, ctx, before)
        record["seconds"] = round(time.monotonic() - started, 2)
        if record["outcome"] not in ("escaped", "limit") or mode == "control":
            shutil.rmtree(self.root / mode / attempt["id"], ignore_errors=True)
        return record

    def classify(self, mode, attempt, ctx, before):
        if self.escaped(ctx, before):
            return "limit" if (mode, attempt["id"]) in self.limits else "escaped"
        return "sandboxed" if self.run_rows(ctx) > 0 else "inert"


def answer_of(result, command):
    """Claude Code's reading of a PreToolUse answer: (verdict, command to run, reason)."""
    if result.returncode == 2:
        return "deny", None, result.stderr.strip()
    if result.returncode != 0:
        # Claude Code runs the command after a hook error that is not exit 2: that is what
        # happens, so that is what the corpus does.
        return "error", command, result.stderr.strip()
    if not result.stdout.strip():
        return "silent", command, ""
    answer = json.loads(result.stdout)
    specific = answer.get("hookSpecificOutput", {})
    decision = specific.get("permissionDecision", "")
    reason = specific.get("permissionDecisionReason", "")
    if decision == "deny" or answer.get("decision") == "block" or answer.get("continue") is False:
        return "deny", None, reason
    updated = specific.get("updatedInput", {}).get("command")
    return decision or "none", updated if updated is not None else command, reason


def table(results, modes):
    classes = sorted({r["class"] for r in results})
    lines = []
    for mode in modes:
        rows = [r for r in results if r["mode"] == mode]
        columns = OUTCOMES if mode != "control" else ("escaped", "inert")
        lines.append(f"\nmode {mode}: {len(rows)} attempts")
        lines.append(f"  {'class':<18}" + "".join(f"{c:>10}" for c in columns))
        for cls in classes + ["total"]:
            subset = [r for r in rows if cls in ("total", r["class"])]
            counts = [sum(1 for r in subset if r["outcome"] == c) for c in columns]
            lines.append(f"  {cls:<18}" + "".join(f"{n:>10}" for n in counts))
    return "\n".join(lines)


def markdown(results, modes):
    """The per-mode table as README.md prints it: refused / sandboxed / limit / escaped."""
    modes = [m for m in modes if m != "control"]
    classes = sorted({r["class"] for r in results})
    lines = ["| class | attempts | " + " | ".join(modes) + " |",
             "|---|---|" + "---|" * len(modes)]
    for cls in classes + ["total"]:
        cells = []
        for mode in modes:
            rows = [r for r in results if r["mode"] == mode and cls in ("total", r["class"])]
            counts = {c: sum(1 for r in rows if r["outcome"] == c) for c in OUTCOMES}
            cells.append(" / ".join(str(counts[c]) for c in ("refused", "sandboxed", "limit", "escaped")))
        n = len([r for r in results if r["mode"] == modes[0] and cls in ("total", r["class"])])
        lines.append(f"| {cls} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def failures(results, limits):
    bad = []
    for r in results:
        if r["mode"] == "control":
            continue
        if r["outcome"] == "escaped" or r["outcome"] == "inert":
            bad.append(r)
        elif r["outcome"] == "limit" and r["mode"] == "wrap":
            bad.append(r)
    used = {(r["mode"], r["id"]) for r in results if r["outcome"] == "limit"}
    stale = sorted(set(limits) - used)
    return bad, stale


def engine_answers(engine):
    try:
        return subprocess.run([engine, "info"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--sandshim", default=os.environ.get("SANDSHIM_BIN", "build/sandshim"))
    parser.add_argument("--engine", default="docker")
    parser.add_argument("--modes", default="control,path,deny,wrap")
    parser.add_argument("--only", default="", help="comma-separated attempt ids or classes")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("--keep", action="store_true", help="keep the test directory")
    parser.add_argument("--markdown", action="store_true", help="also print the README table")
    args = parser.parse_args()
    if not engine_answers(args.engine):
        if os.environ.get("CI") == "true":
            log(f"the {args.engine} engine does not answer (CI=true: failing)")
            return 1
        log(f"SKIP: the {args.engine} engine does not answer")
        return EXIT_SKIP
    corpus = Corpus(args)
    modes = args.modes.split(",")
    only = set(filter(None, args.only.split(",")))
    attempts = [a for a in cases.ATTEMPTS if not only or a["id"] in only or a["class"] in only]
    started = time.monotonic()
    for mode in modes:
        corpus.template(mode)
    work = [(m, a) for m in modes for a in attempts]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for record in pool.map(lambda job: corpus.attempt(*job), work):
            results.append(record)
    elapsed = time.monotonic() - started
    print(table(results, modes))
    if args.markdown:
        print("\n" + markdown(results, modes))
    needs_missing = {
        a["id"] for a in attempts if any(shutil.which(n, path=SYSTEM_PATH) is None for n in a["needs"])
    }
    dead = [r["id"] for r in results if r["mode"] == "control" and r["outcome"] == "inert"]
    print(f"\ncontrols that do not escape without the hook: {len(dead)}"
          f" ({len([d for d in dead if d in needs_missing])} need a program this host lacks)")
    for attempt_id in dead:
        print(f"  {attempt_id}" + (" (needs a missing program)" if attempt_id in needs_missing else ""))
    bad, stale = failures(results, corpus.limits)
    for r in bad:
        print(f"\nFAIL {r['mode']} {r['id']} ({r['class']}): {r['outcome']}, hook said "
              f"{r.get('verdict')}\n  reason: {r.get('reason', '')[:300]}\n  output: "
              f"{r.get('output', '')[:300]}")
    for mode, attempt_id in stale:
        print(f"\nnote: limits.txt lists {mode} {attempt_id}, which no longer escapes")
    print(f"\n{len(work)} attempts in {elapsed:.0f}s with {args.jobs} jobs; test directory {corpus.root}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if not args.keep and not bad:
        shutil.rmtree(corpus.root, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
