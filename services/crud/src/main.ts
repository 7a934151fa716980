import { runService } from '@app/platform';
import { crudService } from './service.js';

await runService(crudService);
