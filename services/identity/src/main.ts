import { DEFAULT_PORTS, runStandalone } from '@app/platform';
import { identityService } from './index.js';

await runStandalone(identityService, DEFAULT_PORTS.identity);
