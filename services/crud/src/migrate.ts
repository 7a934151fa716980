import { runMigrations } from '@app/platform';
import { crudService } from './service.js';

await runMigrations(crudService);
