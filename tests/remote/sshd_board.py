"""A throwaway "board" for the remote tests: Debian's sshd as the current user on 127.0.0.1.

Everything lives in one temporary directory: a host key, a client key, authorized_keys, the
sshd config and pid file, and an ssh config for the client that trusts exactly this host key
(a known_hosts file written from it). The client config is what a user's ~/.ssh/config would
say; the tests pass it with --ssh-config, never by turning host-key checking off.

If sshd cannot start, SshdBoard raises with sshd's own log: the remote tests never skip.
"""

import os
import socket
import subprocess
import time

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 10
PRIVSEP_DIR = "/run/sshd"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_pids(parent):
    """Processes whose parent is `parent` (from /proc/PID/stat)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the command name in parentheses, which may hold spaces.
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            pids.append(int(entry))
    return pids


def keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)


class SshdBoard:
    """sshd on 127.0.0.1:port; `spec` is the --remote destination, `ssh_config` the client file.

    Boards made in one `workdir` form a lab: one client key and one ssh config and known_hosts
    (each board's own host key added), as a user reaching several boards has.
    """

    def __init__(self, workdir, name="board"):
        if not os.access(SSHD, os.X_OK):
            raise RuntimeError(f"{SSHD} is missing: install openssh-server "
                               "(scripts/bootstrap.sh does)")
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.name = name
        self.port = free_port()
        self.user = os.environ.get("USER") or subprocess.run(
            ["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
        self.host_key = os.path.join(self.dir, "host_key")
        self.client_key = os.path.join(workdir, "client_key")
        self.known_hosts = os.path.join(workdir, "known_hosts")
        self.ssh_config = os.path.join(workdir, "ssh_config")
        if not os.path.exists(self.client_key):
            keygen(self.client_key)
        keygen(self.host_key)
        self._write_files()
        self.proc = None
        self.start()

    def _write_files(self):
        d = self.dir
        with open(self.client_key + ".pub") as f:
            client_pub = f.read()
        with open(os.path.join(d, "authorized_keys"), "w") as f:
            f.write(client_pub)
        with open(self.host_key + ".pub") as f:
            host_pub = f.read().split()
        with open(self.known_hosts, "a") as f:
            f.write(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        self.sshd_config = os.path.join(d, "sshd_config")
        with open(self.sshd_config, "w") as f:
            f.write(f"""ListenAddress 127.0.0.1
Port {self.port}
HostKey {self.host_key}
AuthorizedKeysFile {d}/authorized_keys
PidFile {d}/sshd.pid
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
""")
        # Host-key checking stays on: the lab's known_hosts holds every board's key.
        with open(self.ssh_config, "w") as f:
            f.write(f"""Host 127.0.0.1
  User {self.user}
  IdentityFile {self.client_key}
  IdentitiesOnly yes
  UserKnownHostsFile {self.known_hosts}
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
""")
        self.spec = f"{self.user}@127.0.0.1:{self.port}"

    def start(self):
        if os.geteuid() == 0:
            # sshd started by root wants its privilege-separation directory, which Debian's
            # ssh.service creates (RuntimeDirectory=sshd); containers without systemd lack it.
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        self.log = os.path.join(self.dir, "sshd.log")
        logf = open(self.log, "w")
        # -D: stay in the foreground (the test owns the process); -e: log to stderr (the file).
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", self.sshd_config],
                                     stdout=logf, stderr=logf)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                if self.ssh(["true"]).returncode == 0:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        with open(self.log) as f:
            raise RuntimeError(f"sshd on 127.0.0.1:{self.port} did not start "
                               f"({SSHD} -D -e -f {self.sshd_config}); its log:\n{f.read()}")

    def ssh(self, argv):
        return subprocess.run(["ssh", "-F", self.ssh_config, "-p", str(self.port), "127.0.0.1"]
                              + argv, capture_output=True, text=True)

    def stop(self):
        """Kills this sshd and the sessions it started (a board dropping off the network)."""
        if self.proc is None:
            return
        # Each open session is a child of the listener; ending them drops their connections.
        for pid in child_pids(self.proc.pid):
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc = None

    def ssh_args(self):
        """ember-run's options to reach this board."""
        return ["--remote", self.spec, "--ssh-config", self.ssh_config]
