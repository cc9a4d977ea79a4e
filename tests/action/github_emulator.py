"""Runs the steps of the repository's composite action (action.yml) the way a GitHub runner
does, with the GitHub environment faked in a temporary directory: GITHUB_STEP_SUMMARY,
GITHUB_OUTPUT (a new file per step), GITHUB_ENV and GITHUB_PATH (both carried to later steps),
RUNNER_TEMP, GITHUB_WORKSPACE as the working directory, `run:` steps through
`bash --noprofile --norc -eo pipefail`, `if: always()`, and actions/upload-artifact (records
which files the artifact would hold). Any other expression or action is an error, so a change
to action.yml that this emulator does not understand fails the test instead of being skipped.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class ActionResult:
    def __init__(self):
        self.steps = []        # (name, exit code or None when skipped)
        self.outputs = {}      # the action's outputs
        self.summary = ""      # GITHUB_STEP_SUMMARY contents
        self.artifacts = {}    # artifact name -> sorted relative file paths
        self.log = ""

    @property
    def failed(self):
        return any(rc not in (0, None) for _, rc in self.steps)


def run_action(inputs, workspace, runner, extra_path=(), env=None):
    """Runs action.yml with `inputs` in `workspace`; `runner` is a scratch directory for the
    faked runner files. Returns an ActionResult."""
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    values = {}
    for name, spec in action["inputs"].items():
        if name in inputs:
            values[name] = str(inputs[name])
        elif spec.get("required"):
            raise ValueError(f"required input '{name}' not given")
        else:
            values[name] = str(spec.get("default", ""))
    unknown = set(inputs) - set(values)
    if unknown:
        raise ValueError(f"unknown inputs {sorted(unknown)}")

    runner = Path(runner)
    runner.mkdir(parents=True, exist_ok=True)
    summary, env_file, path_file = runner / "summary.md", runner / "env", runner / "path"
    for f in (summary, env_file, path_file):
        f.write_text("")
    (runner / "temp").mkdir(exist_ok=True)
    step_outputs = {}
    result = ActionResult()

    def expand(text):
        def one(m):
            expr = m.group(1)
            if expr.startswith("inputs."):
                return values[expr[len("inputs."):]]
            if expr == "github.action_path":
                return str(REPO)
            parts = expr.split(".")
            if len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs":
                return step_outputs.get(parts[1], {}).get(parts[3], "")
            raise ValueError(f"emulator does not know the expression '{expr}'")
        return EXPR.sub(one, str(text))

    failed = False
    for i, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {i}")
        condition = step.get("if", "success()")
        if condition not in ("always()", "success()"):
            raise ValueError(f"emulator does not know the condition '{condition}'")
        if failed and condition != "always()":
            result.steps.append((name, None))
            continue
        if "run" in step:
            assert step.get("shell") == "bash", f"{name}: composite run steps need shell: bash"
            output_file = runner / f"output-{i}"
            output_file.write_text("")
            step_env = dict(os.environ if env is None else env)
            for line in env_file.read_text().splitlines():
                if "=" in line:
                    k, v = line.split("=", 1)
                    step_env[k] = v
            step_env.update({k: expand(v) for k, v in step.get("env", {}).items()})
            added = [p for p in path_file.read_text().splitlines() if p]
            step_env["PATH"] = os.pathsep.join(
                list(reversed(added)) + [str(p) for p in extra_path] + [step_env.get("PATH", "")])
            step_env.update({
                "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(workspace),
                "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output_file),
                "GITHUB_ENV": str(env_file), "GITHUB_PATH": str(path_file),
                "GITHUB_ACTION_PATH": str(REPO), "RUNNER_TEMP": str(runner / "temp"),
            })
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                   expand(step["run"])], cwd=workspace, env=step_env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=600)
            result.log += f"--- {name} (exit {proc.returncode})\n{proc.stdout}"
            outs = {}
            for line in output_file.read_text().splitlines():
                if "=" in line:
                    k, v = line.split("=", 1)
                    outs[k] = v
            if "id" in step:
                step_outputs[step["id"]] = outs
            result.steps.append((name, proc.returncode))
            failed = failed or proc.returncode != 0
        elif str(step.get("uses", "")).startswith("actions/upload-artifact@"):
            w = {k: expand(v) for k, v in step.get("with", {}).items()}
            root = Path(workspace) / w["path"]
            files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) \
                if root.is_dir() else []
            if not files and w.get("if-no-files-found", "warn") == "error":
                result.steps.append((name, 1))
                failed = True
                continue
            result.artifacts[w["name"]] = files
            result.steps.append((name, 0))
        else:
            raise ValueError(f"emulator does not know the step {step}")
    result.outputs = {k: expand(v["value"]) for k, v in action.get("outputs", {}).items()}
    result.summary = summary.read_text()
    return result


def apt_get_shim(directory, root):
    """An `apt-get` that installs a local .deb into the clean dpkg root `root` instead of the
    system, and puts root/usr/bin on the job's PATH the way /usr/bin already is on a runner.
    Like apt on a fresh machine or container, it has no package lists until `update`: before
    one, a .deb that depends on anything cannot be installed ("Unable to locate package").
    `update` only records that it ran, and `install -y PACKAGE...` (the toolchain install=build asks for)
    succeeds only when every package is already installed on this machine (dpkg-query), so the
    test runs offline and installs nothing on the machine.
    Anything else it is asked fails, so the test notices when the action needs the network."""
    directory, root = Path(directory), Path(root)
    directory.mkdir(parents=True, exist_ok=True)
    for sub in ("info", "updates", "triggers"):
        (root / "var/lib/dpkg" / sub).mkdir(parents=True, exist_ok=True)
    for f in ("status", "available"):
        (root / "var/lib/dpkg" / f).touch()
    shim = directory / "apt-get"
    shim.write_text(f"""#!/usr/bin/env bash
# test shim (tests/action/github_emulator.py)
if [ "$1" = install ] && [ "$2" = -y ] && [ $# = 3 ] && [[ "$3" == /*.deb ]]; then
  if [ ! -e '{root}/apt-lists' ] && [ -n "$(dpkg-deb -f "$3" Depends)" ]; then
    echo "E: Unable to locate package $(dpkg-deb -f "$3" Depends | cut -d' ' -f1) (apt-get shim: no apt-get update yet)" >&2
    exit 100
  fi
  dpkg --root='{root}' --force-depends --force-not-root --force-script-chrootless -i "$3" || exit $?
  echo '{root}/usr/bin' >> "$GITHUB_PATH"
  exit 0
fi
if [ "$1" = update ] && [ $# = 1 ]; then touch '{root}/apt-lists'; exit 0; fi
if [ "$1" = install ] && [ "$2" = -y ]; then
  shift 2
  for pkg in "$@"; do
    # dpkg-query -W, not dpkg -s: on a multiarch machine (arm64 libraries for the cross build of
    # README "Other CPUs") dpkg -s refuses a name installed for two architectures as ambiguous.
    dpkg-query -W -f='${{db:Status-Status}}\n' "$pkg" 2>/dev/null | grep -qx installed || {{ echo "apt-get shim: $pkg is not installed on this machine" >&2; exit 100; }}
  done
  exit 0
fi
echo "apt-get shim: not emulated: $*" >&2
exit 100
""")
    shim.chmod(0o755)
    return directory


def build_deb(build_dir, out_dir):
    """Makes the Debian package from a configured and built Release directory."""
    subprocess.run(["cpack", "-G", "DEB", "-B", str(out_dir)], cwd=build_dir, check=True,
                   stdout=subprocess.DEVNULL)
    debs = sorted(Path(out_dir).glob("shardgate_*.deb"))
    assert debs, "cpack made no package"
    return debs[0]


def copy_sample(workspace):
    """The bundled sample inside the job's workspace, as a user's repository would hold shards."""
    shutil.copytree(REPO / "goldens" / "sample", Path(workspace) / "sample")
