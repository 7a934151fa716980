import { DEFAULT_PORTS, runStandalone } from '@app/platform';
import { crudService } from './index.js';

await runStandalone(crudService, DEFAULT_PORTS.crud);
