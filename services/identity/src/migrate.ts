import { runMigrations } from '@app/platform';
import { identityService } from './service.js';

await runMigrations(identityService);
