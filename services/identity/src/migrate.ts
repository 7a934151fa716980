import { runMigrationsStandalone } from '@app/platform';
import { identityService } from './index.js';

await runMigrationsStandalone(identityService);
