"""Launching helpers (upstream's pylibwholegraph/torch/distributed_launch.py API): the rank,
world size and local placement of this process, from MPI, torchrun-style environment variables
or torch.multiprocessing.spawn."""

import os
from argparse import ArgumentParser

import torch


class DistributedConfig(object):
    def __init__(self):
        super().__init__()
        self.rank = -1
        self.world_size = -1
        self.local_rank = -1
        self.local_size = -1
        self.master_addr = ""
        self.master_port = -1

    def get_rank(self):
        return self.rank

    def get_world_size(self):
        return self.world_size

    def get_local_rank(self):
        return self.local_rank

    def get_local_size(self):
        return self.local_size

    def get_master_addr(self):
        return self.master_addr

    def get_master_port(self):
        return self.master_port


distributed_config = DistributedConfig()


def get_rank():
    return distributed_config.get_rank()


def get_world_size():
    return distributed_config.get_world_size()


def get_local_rank():
    return distributed_config.get_local_rank()


def get_local_size():
    return distributed_config.get_local_size()


def get_master_addr():
    return distributed_config.get_master_addr()


def get_master_port():
    return distributed_config.get_master_port()


def is_main_process():
    return get_rank() == 0


def add_distributed_launch_options(parser: ArgumentParser):
    parser.add_argument("--launch-agent", dest="launch_agent", default="mpi",
                        help="launch agent used, mpi, pytorch or spawn")
    for flag, dest in (("--rank", "rank"), ("--world-size", "world_size"),
                       ("--local-rank", "local_rank"), ("--local-size", "local_size"),
                       ("--master-port", "master_port")):
        parser.add_argument(flag, dest=dest, type=int, default=-1,
                            help=f"command line flag for {dest}")
    parser.add_argument("--master-addr", dest="master_addr", default="",
                        help="command line flag for master_addr")
    for suffix, default in (("world-rank", "RANK"), ("world-size", "WORLD_SIZE"),
                            ("local-rank", "LOCAL_RANK"), ("local-size", "LOCAL_WORLD_SIZE"),
                            ("master-addr", "MASTER_ADDR"), ("master-port", "MASTER_PORT")):
        parser.add_argument(f"--launch-env-name-{suffix}",
                            dest="launch_env_name_" + suffix.replace("-", "_"), default=default,
                            help=f"environment variable name for {suffix.replace('-', '_')}")


def get_value_from_env(env_name, fill_default=None):
    if env_name in os.environ:
        return os.environ[env_name]
    if fill_default is not None:
        return fill_default
    raise ValueError("both command line flag and environment %s not exist." % (env_name,))


def get_value_from_option_and_env(option_value, env_name, empty_value, fill_default=None):
    if option_value != empty_value:
        return option_value
    return get_value_from_env(env_name, fill_default)


def _export_world(config):
    os.environ["RANK"] = str(config.rank)
    os.environ["WORLD_SIZE"] = str(config.world_size)
    os.environ["MASTER_ADDR"] = config.master_addr
    os.environ["MASTER_PORT"] = str(config.master_port)


def distributed_launch_mpi(args, main_func):
    from mpi4py import MPI  # only this agent needs mpi4py

    world = MPI.COMM_WORLD
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    config = distributed_config
    config.rank, config.world_size = world.Get_rank(), world.Get_size()
    config.local_rank, config.local_size = node.Get_rank(), node.Get_size()
    config.master_addr = get_value_from_option_and_env(
        args.master_addr, args.launch_env_name_master_addr, "", "localhost")
    config.master_port = int(get_value_from_option_and_env(
        args.master_port, args.launch_env_name_master_port, -1, 12335))
    _export_world(config)
    main_func()


def distributed_launch_pytorch(args, main_func):
    config = distributed_config
    config.rank = int(get_value_from_env(args.launch_env_name_world_rank))
    config.world_size = int(get_value_from_env(args.launch_env_name_world_size))
    config.local_rank = int(get_value_from_option_and_env(
        args.local_rank, args.launch_env_name_local_rank, -1))
    config.local_size = int(get_value_from_option_and_env(
        args.local_size, args.launch_env_name_local_size, -1))
    if config.local_rank < 0 or config.local_size <= 0:
        raise ValueError(f"local rank {config.local_rank} / local size {config.local_size} "
                         "are not valid")
    config.master_addr = get_value_from_env(args.launch_env_name_master_addr)
    config.master_port = int(get_value_from_env(args.launch_env_name_master_port))
    main_func()


def main_spawn_routine(local_rank, main_func, distributed_config_input):
    global distributed_config
    distributed_config = distributed_config_input
    node_rank, node_count = distributed_config.rank, distributed_config.world_size
    distributed_config.rank = node_rank * distributed_config.local_size + local_rank
    distributed_config.world_size = node_count * distributed_config.local_size
    distributed_config.local_rank = local_rank
    _export_world(distributed_config)
    main_func()


def distributed_launch_spawn(args, main_func):
    config = distributed_config
    config.rank = int(get_value_from_option_and_env(args.rank, args.launch_env_name_world_rank,
                                                    -1, 0))
    config.world_size = int(get_value_from_option_and_env(
        args.world_size, args.launch_env_name_world_size, -1, 1))
    config.local_rank = 0
    config.local_size = int(get_value_from_option_and_env(
        args.local_size, args.launch_env_name_local_size, -1, 1))
    config.master_addr = get_value_from_option_and_env(
        args.master_addr, args.launch_env_name_master_addr, "", "localhost")
    config.master_port = int(get_value_from_option_and_env(
        args.master_port, args.launch_env_name_master_port, -1, 12335))
    if config.local_size > 1:
        torch.multiprocessing.spawn(main_spawn_routine, nprocs=config.local_size,
                                    args=(main_func, config))
    else:
        main_spawn_routine(0, main_func, config)


def distributed_launch(args, main_func):
    """Runs main_func in this process with the job's layout filled in, by args.launch_agent:
    "mpi" (mpirun), "pytorch" (torchrun / torch.distributed.run variables) or "spawn" (one
    process per node, spawning local_size ranks)."""
    agents = {"mpi": distributed_launch_mpi, "pytorch": distributed_launch_pytorch,
              "spawn": distributed_launch_spawn}
    if args.launch_agent not in agents:
        raise ValueError(f"launch_agent must be one of {sorted(agents)}, not {args.launch_agent!r}")
    agents[args.launch_agent](args, main_func)
