import { runMigrations } from '@app/platform';
import { ssoService } from './service.js';

await runMigrations(ssoService);
