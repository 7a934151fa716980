import { runMigrations } from '@app/platform';
import { credentialsService } from './service.js';

await runMigrations(credentialsService);
