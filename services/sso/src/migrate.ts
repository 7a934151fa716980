import { runMigrationsStandalone } from '@app/platform';
import { ssoService } from './index.js';

await runMigrationsStandalone(ssoService);
