// The harness's linearizability checker: a small program around Porcupine (the checker etcd's robustness
// tests use), built on first use by harness/validate/linearizability.py into the harness cache.
module ha-harness/porcupine

go 1.21

require github.com/anishathalye/porcupine v1.3.1
