import { DEFAULT_PORTS, runStandalone } from '@app/platform';
import { healthService } from './index.js';

await runStandalone(healthService, DEFAULT_PORTS.health);
