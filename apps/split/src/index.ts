export { MAX_REPLICAS, missingVariables, replicaPort, REQUIRED_VARIABLES, SPLIT_SERVICES, startSplit, type SplitCluster, type SplitOptions, type SplitProcess } from './split.js';
