"""The Kubernetes backend: MPIJob (kubeflow.org/v2beta1) for Horovod training, batch/v1 Jobs
for single-process work, every manifest validated against vendored schemas before it is sent."""
