import { DEFAULT_PORTS, runStandalone } from '@app/platform';
import { credentialsService } from './index.js';

await runStandalone(credentialsService, DEFAULT_PORTS.credentials);
