"""Ports for the servers a launcher is about to start (torch.distributed's rendezvous, memloom's
config store at MASTER_PORT + 1, TransferEngine's listeners), shared by the examples.

Ports come from below the kernel's ephemeral range. A port from bind(("", 0)) lies inside it, and
is free only until the server binds it a moment later: meanwhile any outgoing connection on the
host may take it, or take MASTER_PORT + 1 (Linux gives bind(0) odd ports and connect() even ones,
so the port after a probed one is exactly what connections pick). Below the range only explicit
binds compete, and every port is checked free when it is handed out."""

import random
import socket

_handed_out = set()  # never hand one port out twice in this process, even once closed again


def _ephemeral_range_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port):
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(count, consecutive=1):
    """`count` ports, each the first of `consecutive` free ports, none handed out before."""
    chooser = random.SystemRandom()
    high = min(_ephemeral_range_start(), 65536) - consecutive
    low = 10000 if high > 12000 else 1024
    ports = []
    for _ in range(2000):
        if len(ports) == count:
            break
        port = chooser.randrange(low, high)
        block = range(port, port + consecutive)
        if any(p in _handed_out for p in block) or not all(_bindable(p) for p in block):
            continue
        _handed_out.update(block)
        ports.append(port)
    if len(ports) < count:
        raise RuntimeError(f"no {consecutive} consecutive free loopback ports in {low}..{high}")
    return ports


def master_port():
    """MASTER_PORT for a job on this host, with MASTER_PORT + 1 (memloom's store) free too."""
    return free_ports(1, consecutive=2)[0]
