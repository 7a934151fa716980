import { runMigrationsStandalone } from '@app/platform';
import { crudService } from './index.js';

await runMigrationsStandalone(crudService);
