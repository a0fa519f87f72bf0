#!/usr/bin/env python3
"""cluster_recipes: deploy/'s recipes give every rank the environment loom's rank discovery reads.

For each recipe the environment each rank of a multi-node job would get is built from the recipe
itself (the JobSet's pod template through deploy/loom-launch-ranks; the sbatch script's
directives through the variables srun sets), and cluster_tool reads it as loom does
(dist::read_launch_environment, dist::local_cuda_device): the ranks must come out 0..N-1 once
each, with one world size and one rendezvous, the node's GPUs 0..G-1 on every node, and the
rendezvous at the host that rank 0 runs on. Every YAML file in deploy/ must parse, and the
Dockerfile must install what the manifests run.
  recipes_test.py SOURCE_DIR CLUSTER_TOOL
Exit status 77 (skipped) without PyYAML (Debian: python3-yaml), 1 on a failure.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

try:
    import yaml
except ImportError:
    print("cluster_recipes: SKIPPED: no PyYAML for this python3 (Debian: python3-yaml; "
          "scripts/install-deps.sh installs it)")
    sys.exit(77)

SOURCE, TOOL = Path(sys.argv[1]), sys.argv[2]
LAUNCH_RANKS = SOURCE / "deploy" / "loom-launch-ranks"
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def run(command, env):
    """Runs command with exactly env (and PATH); returns (status, stdout, stderr)."""
    env = dict(env, PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    p = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def discovered(lines, what):
    ranks = []
    for line in lines.splitlines():
        try:
            ranks.append(json.loads(line))
        except json.JSONDecodeError:
            check(False, f"{what}: cluster_tool printed '{line[:120]}', not JSON")
    return ranks


def check_world(ranks, what, nodes, per_node, master_addr, master_port, launcher, cuda):
    """ranks: every rank's discovery, node by node. cuda(local_rank) is the GPU it must take."""
    world = nodes * per_node
    check(sorted(r["rank"] for r in ranks) == list(range(world)),
          f"{what}: ranks {sorted(r['rank'] for r in ranks)}, not 0..{world - 1} once each")
    for r in ranks:
        who = f"{what}: rank {r['rank']}"
        check(r["launcher"] == launcher, f"{who} was found as launched by {r['launcher']}, not {launcher}")
        check(r["world_size"] == world, f"{who} sees a world of {r['world_size']}, not {world}")
        check(r["local_world_size"] == per_node,
              f"{who} sees {r['local_world_size']} ranks on its node, not {per_node}")
        check(r["local_rank"] == r["rank"] % per_node,
              f"{who} is local rank {r['local_rank']}, not {r['rank'] % per_node}")
        check((r["master_addr"], r["master_port"]) == (master_addr, master_port),
              f"{who} meets at {r['master_addr']}:{r['master_port']}, not {master_addr}:{master_port}")
        check(r.get("cuda_device") == cuda(r["local_rank"]),
              f"{who} takes cuda:{r.get('cuda_device')}, not cuda:{cuda(r['local_rank'])}")


def jobset_checks(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    sets = [d for d in docs if d.get("kind") == "JobSet"]
    if not check(len(sets) == 1, f"{path}: {len(sets)} JobSets, not 1"):
        return None, ""
    js = sets[0]
    what = f"{path.name}"
    check(js.get("apiVersion") == "jobset.x-k8s.io/v1alpha2", f"{what}: apiVersion {js.get('apiVersion')}")
    name = js["metadata"]["name"]
    annotations = js["metadata"].get("annotations", {})
    check(annotations.get("alpha.jobset.sigs.k8s.io/exclusive-topology") == "kubernetes.io/hostname",
          f"{what}: no exclusive-topology kubernetes.io/hostname annotation: pods may share a node")
    network = js["spec"].get("network", {})
    check(network.get("enableDNSHostnames") is True, f"{what}: pods get no DNS names (enableDNSHostnames)")
    subdomain = network.get("subdomain", name)
    rjobs = js["spec"]["replicatedJobs"]
    if not check(len(rjobs) == 1 and rjobs[0].get("replicas", 1) == 1,
                 f"{what}: expected one replicated job of one Job (one pod per node)"):
        return None, ""
    rjob = rjobs[0]
    job = rjob["template"]["spec"]
    check(job.get("completionMode") == "Indexed", f"{what}: the Job is not Indexed: pods have no index")
    nodes = job.get("parallelism")
    check(job.get("completions") == nodes, f"{what}: completions {job.get('completions')} != parallelism {nodes}")
    check(job.get("backoffLimit") == 0, f"{what}: backoffLimit {job.get('backoffLimit')}: a lost pod "
          "must fail the job set, not come back alone into a job whose ranks have failed")
    pod = job["template"]["spec"]
    container = pod["containers"][0]
    check(container.get("command") == ["loom-launch-ranks"], f"{what}: the command is not loom-launch-ranks")
    program = container.get("args", [None])[0]
    env, node_rank_ok = {}, False
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif e["name"] == "NODE_RANK":
            node_rank_ok = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == COMPLETION_INDEX
    check(node_rank_ok, f"{what}: NODE_RANK does not come from {COMPLETION_INDEX}")
    gpus = container.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
    check(str(nodes) == env.get("NNODES"), f"{what}: NNODES {env.get('NNODES')} but {nodes} pods")
    check(str(gpus) == env.get("NPROC_PER_NODE"),
          f"{what}: NPROC_PER_NODE {env.get('NPROC_PER_NODE')} but {gpus} nvidia.com/gpu per pod")
    pod0 = f"{name}-{rjob['name']}-0-0.{subdomain}"
    check(env.get("MASTER_ADDR") == pod0, f"{what}: MASTER_ADDR {env.get('MASTER_ADDR')} is not pod 0, {pod0}")
    shm = [v["name"] for v in pod.get("volumes", []) if v.get("emptyDir", {}).get("medium") == "Memory"]
    check(any(m.get("mountPath") == "/dev/shm" and m["name"] in shm for m in container.get("volumeMounts", [])),
          f"{what}: no memory-backed /dev/shm for NCCL")
    check(container.get("env") and env.get("NCCL_NVLS_ENABLE") == "0", f"{what}: NCCL_NVLS_ENABLE is not 0")
    if not (isinstance(nodes, int) and str(gpus).isdigit() and env.get("MASTER_PORT", "").isdigit()):
        check(False, f"{what}: nodes, GPUs or MASTER_PORT not numbers")
        return program, ""
    # Each pod as the kubelet starts it: the template's values, NODE_RANK from the pod's index.
    ranks = []
    for node in range(nodes):
        status, out, err = run([str(LAUNCH_RANKS), TOOL, "env", "--visible-gpus", str(gpus)],
                               dict(env, NODE_RANK=str(node)))
        check(status == 0, f"{what}: loom-launch-ranks on node {node} ended {status}: {err.strip()}")
        ranks += discovered(out, f"{what} node {node}")
    check_world(ranks, what, nodes, int(gpus), pod0, int(env["MASTER_PORT"]), "env",
                cuda=lambda local: local)  # a pod sees its node's GPUs: cuda:LOCAL_RANK
    return program, f"{nodes} pods x {gpus} GPUs"


def sbatch_checks(path):
    what = path.name
    directives = {}
    for line in path.read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break  # sbatch reads #SBATCH lines up to the first command
        m = re.match(r"#SBATCH\s+--([a-z-]+)(?:=(\S+))?", line)
        if m:
            directives[m.group(1)] = m.group(2)
    check(directives.get("gpus-per-task") == "1", f"{what}: not one GPU per task (--gpus-per-task=1)")
    nodes, per_node = int(directives.get("nodes", 0)), int(directives.get("ntasks-per-node", 0))
    check(nodes >= 2 and per_node >= 1, f"{what}: --nodes {nodes} --ntasks-per-node {per_node}")
    body = path.read_text()
    check(re.search(r'^srun .*"\$@"( \|\| status=\$\?)?$', body, re.M) is not None,
          f"{what}: does not srun its arguments")
    # Preemption: requeued on exit 143, with SIGUSR1 ahead of the time limit.
    check("requeue" in directives and (directives.get("signal") or "").startswith("USR1@"),
          f"{what}: no --requeue and --signal=USR1@SECONDS")
    check(re.search(r'scontrol requeue "\$SLURM_JOB_ID"', body) is not None,
          f"{what}: does not requeue itself when its ranks were preempted (exit 143)")
    check("NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}" in body, f"{what}: does not default NCCL_NVLS_ENABLE to 0")
    # Each task as srun starts it on nodes gpu-node01.., with --gpus-per-task 1 binding its own GPU.
    job_id = 123456
    world = nodes * per_node
    ranks = []
    for r in range(world):
        env = {"SLURM_JOB_ID": str(job_id), "SLURM_STEP_NUM_TASKS": str(world), "SLURM_PROCID": str(r),
               "SLURM_LOCALID": str(r % per_node), "SLURM_STEP_TASKS_PER_NODE": f"{per_node}(x{nodes})",
               "SLURM_STEP_NODELIST": f"gpu-node[01-{nodes:02d}]", "CUDA_VISIBLE_DEVICES": str(r % per_node)}
        status, out, err = run([TOOL, "env", "--visible-gpus", "1"], env)
        check(status == 0, f"{what}: task {r}: cluster_tool ended {status}: {err.strip()}")
        ranks += discovered(out, f"{what} task {r}")
    check_world(ranks, what, nodes, per_node, "gpu-node01", 20000 + job_id % 20000, "srun",
                cuda=lambda local: 0)  # its one GPU, whatever SLURM_LOCALID
    return f"{nodes} nodes x {per_node} tasks"


def dockerfile_checks(path, programs):
    text = path.read_text()
    what = path.name
    check(re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:\S+-devel-\S+$", text, re.M) is not None,
          f"{what}: not built on an nvidia/cuda -devel image")
    check("-DLOOM_CUDA=ON" in text, f"{what}: does not require the CUDA backend")
    check(re.search(r"^ENV PATH=/opt/loom/bin:", text, re.M) is not None, f"{what}: /opt/loom/bin not on PATH")
    installed = {"loom-catdog", "loom-scaling", "loom-gpu-basics"}  # cmake --install's programs
    m = re.search(r"install -m 755 (.*) /opt/loom/bin/", text)
    installed |= {Path(p).name for p in (m.group(1).split() if m else [])}
    for program in programs + ["loom-launch-ranks"]:
        check(program in installed, f"{what}: the image has no {program}, which the manifests run")


def bad_settings_checks():
    """loom-launch-ranks and loom's discovery refuse bad values with a message, before starting."""
    base = {"NNODES": "2", "NPROC_PER_NODE": "4", "NODE_RANK": "0", "MASTER_ADDR": "pod0", "MASTER_PORT": "29500"}
    cases = [({"NODE_RANK": "2"}, "NODE_RANK 2 is not below NNODES 2"),
             ({"NPROC_PER_NODE": "four"}, "NPROC_PER_NODE must be a non-negative integer, got 'four'"),
             ({"MASTER_PORT": "70000"}, "MASTER_PORT must be a port number in [1, 65535], got 70000"),
             ({"MASTER_ADDR": ""}, "MASTER_ADDR is not set")]
    for change, message in cases:
        status, out, err = run([str(LAUNCH_RANKS), TOOL, "env"], dict(base, **change))
        check(status == 2 and message in err and not out,
              f"loom-launch-ranks with {change}: status {status}, '{err.strip()}', not 2 and '{message}'")
    env = {k: v for k, v in base.items() if k != "NODE_RANK"}
    status, out, _ = run([str(LAUNCH_RANKS), TOOL, "env"], dict(env, JOB_COMPLETION_INDEX="1"))
    check(status == 0 and sorted(r["rank"] for r in discovered(out, "JOB_COMPLETION_INDEX=1")) == [4, 5, 6, 7],
          f"loom-launch-ranks does not take NODE_RANK from JOB_COMPLETION_INDEX: {out.strip()}")
    status, _, err = run([TOOL, "env"], {"RANK": "one", "WORLD_SIZE": "2"})
    check(status == 1 and "RANK must be a non-negative integer, got 'one'" in err,
          f"cluster_tool with RANK=one: status {status}, '{err.strip()}'")
    status, _, err = run([TOOL, "env", "--visible-gpus", "2"],
                         {"SLURM_STEP_NUM_TASKS": "4", "SLURM_PROCID": "3", "SLURM_LOCALID": "3"})
    check(status == 1 and "which needs cuda:3, but 2 CUDA devices are visible" in err,
          f"cluster_tool with local rank 3 of 2 GPUs: status {status}, '{err.strip()}'")


def main():
    deploy = SOURCE / "deploy"
    for path in sorted(deploy.rglob("*.yaml")) + sorted(deploy.rglob("*.yml")):
        try:
            list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as e:
            check(False, f"{path}: not YAML: {e}")
    program, jobset = jobset_checks(deploy / "kubernetes" / "loom-jobset.yaml")
    sbatch = sbatch_checks(deploy / "slurm" / "loom.sbatch")
    dockerfile_checks(deploy / "Dockerfile", [program] if program else [])
    bad_settings_checks()
    for f in failures:
        print(f"cluster_recipes: FAILED: {f}")
    if not failures:
        print(f"cluster_recipes: the JobSet ({jobset}), the sbatch recipe ({sbatch}) and the "
              "Dockerfile agree with loom's rank discovery")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
