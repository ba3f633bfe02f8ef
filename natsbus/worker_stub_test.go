package natsbus_test

const workerChildEnv = "NATSBUS_WORKER_CHILD"

func runWorkerChild() int { return 0 }
