import { runEdge } from '@app/platform';
import { gatewayEdge } from './service.js';

await runEdge(gatewayEdge);
