import { runMigrationsStandalone } from '@app/platform';
import { credentialsService } from './index.js';

await runMigrationsStandalone(credentialsService);
