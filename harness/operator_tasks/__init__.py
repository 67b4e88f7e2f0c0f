"""DEP-05 operator tasks on a seed: the task resources (tasks.py) and the executor that runs them
(executor.py), acting on an etcd through the environment's protocols."""
