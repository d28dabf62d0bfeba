"""slurm_cluster: a one-node Slurm cluster for the tests, all of it under a temporary folder: its own munge key and
munged on a socket there, slurmctld and slurmd on free ports, state, spool and logs there, nothing of the machine's
/etc/slurm or /etc/munge used, no cgroups (proctrack/linuxproc, task/none). The node has the CPUs this machine has; the
partition lets two jobs share a CPU (OverSubscribe=FORCE:2), so that a test whose job runs into its one-minute time
limit can run beside the others. Debian's slurmctld, slurmd, slurm-client and munge (`make test-slurm` installs them).

Cluster().start() raises Unavailable with the reason when it cannot start (a program missing, a daemon that does not
come up: its log's end is in the reason); stop() ends every job and daemon it started and removes the folder."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

PROGRAMS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "scancel", "squeue", "scontrol", "sinfo")


class Unavailable(Exception):
    """Why the cluster cannot start here."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path, lines=12):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]).strip() or "(empty)"
    except OSError as e:
        return "(%s)" % e.strerror


class Cluster:
    def __init__(self):
        self.dir = None
        self.procs = []
        self.env = None

    def path(self, name):
        return os.path.join(self.dir, name)

    def conf(self):
        d = self.dir
        return "\n".join([
            "ClusterName=labtest",
            "SlurmctldHost=localhost",
            "SlurmctldPort=%d" % free_port(),
            "SlurmdPort=%d" % free_port(),
            "SlurmUser=%s" % self.user,
            "SlurmdUser=%s" % self.user,
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s/munge.sock" % d,
            "StateSaveLocation=%s/state" % d,
            "SlurmdSpoolDir=%s/spool" % d,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd.pid" % d,
            "SlurmctldLogFile=%s/slurmctld.log" % d,
            "SlurmdLogFile=%s/slurmd.log" % d,
            "PlugStackConfig=%s/plugstack.conf" % d,
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/builtin",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "ReturnToService=2",
            "MinJobAge=600",
            "NodeName=localhost CPUs=%d State=UNKNOWN" % self.cpus,
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE OverSubscribe=FORCE:2 State=UP",
        ]) + "\n"

    def start(self):
        missing = [p for p in PROGRAMS if not shutil.which(p)]
        if missing:
            raise Unavailable("not installed: %s (`make test-slurm` installs slurmctld, slurmd, slurm-client and munge)"
                              % ", ".join(missing))
        import pwd
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.cpus = os.cpu_count() or 1
        # a short path: munge's socket name must fit a sockaddr_un; every user must be able to reach the socket
        self.dir = tempfile.mkdtemp(prefix="lab-slurm-", dir="/tmp")
        os.chmod(self.dir, 0o711)
        for sub in ("state", "spool"):
            os.makedirs(self.path(sub))
        with open(self.path("plugstack.conf"), "w"):
            pass
        key = self.path("munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        with open(self.path("slurm.conf"), "w") as f:
            f.write(self.conf())
        self.env = dict(os.environ, SLURM_CONF=self.path("slurm.conf"))
        for k in [k for k in self.env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del self.env[k]  # a test run inside a Slurm job must not hand its own job's variables on
        self.spawn("munged", ["munged", "-F", "--socket=" + self.path("munge.sock"), "--key-file=" + key,
                              "--pid-file=" + self.path("munged.pid"), "--log-file=" + self.path("munged.log"),
                              "--seed-file=" + self.path("munged.seed")])
        self.wait_for(lambda: os.path.exists(self.path("munge.sock")), 10, "munged did not start", "munged.out")
        self.spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.path("slurm.conf")])
        self.spawn("slurmd", ["slurmd", "-D", "-N", "localhost", "-f", self.path("slurm.conf")])
        self.wait_for(self.idle, 30, "the node did not come up idle", "slurmd.out")

    def spawn(self, name, argv):
        log = open(self.path(name + ".out"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        log.close()
        self.procs.append((name, p))

    def wait_for(self, ready, seconds, why, log):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if ready():
                return
            dead = [n for n, p in self.procs if p.poll() is not None]
            if dead:
                break
            time.sleep(0.2)
        dead = [n for n, p in self.procs if p.poll() is not None]
        names = dead or [log[:-4]]
        tails = "; ".join("%s: %s" % (n, log_tail(self.path(n + ".out"), 6).replace("\n", " | ")) for n in names)
        self.stop()
        raise Unavailable("%s%s: %s" % (why, " (%s exited)" % ", ".join(dead) if dead else "", tails))

    def idle(self):
        r = self.run(["sinfo", "-h", "-n", "localhost", "-o", "%T"], timeout=10)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    def run(self, argv, timeout=300, **kw):
        """A Slurm client command (or anything) with the cluster's environment: CompletedProcess, text output."""
        return subprocess.run(argv, env=dict(self.env, **kw.pop("env", {})), capture_output=True, text=True,
                              timeout=timeout, **kw)

    def popen(self, argv, log, **kw):
        """A command left running (srun in the foreground of a test), its output to the file log."""
        f = open(log, "w")
        p = subprocess.Popen(argv, env=dict(self.env, **kw.pop("env", {})), stdout=f, stderr=subprocess.STDOUT, **kw)
        f.close()
        return p

    def job(self, job_id):
        """`scontrol show job` as a dict of its KEY=VALUE words ({} once the job is forgotten)."""
        r = self.run(["scontrol", "-o", "show", "job", str(job_id)], timeout=20)
        out = {}
        for word in r.stdout.split():
            k, _, v = word.partition("=")
            out.setdefault(k, v)
        return out

    def wait_job(self, job_id, seconds):
        """Waits until the job has ended: its state (COMPLETED, CANCELLED, TIMEOUT, FAILED, ...)."""
        end = time.monotonic() + seconds
        state = "?"
        while time.monotonic() < end:
            state = self.job(job_id).get("JobState", "?")
            if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"):
                return state
            time.sleep(0.5)
        return state

    def stop(self):
        """Ends every job, then the daemons it started (their sessions), and removes the folder."""
        if self.env and self.procs:
            ids = self.run(["squeue", "-h", "-o", "%i"], timeout=20).stdout.split()
            if ids:
                self.run(["scancel", "--signal=KILL", "--full"] + ids, timeout=20)
                self.run(["scancel"] + ids, timeout=20)
                for _ in range(40):
                    if not self.run(["squeue", "-h", "-o", "%i"], timeout=20).stdout.split():
                        break
                    time.sleep(0.5)
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
