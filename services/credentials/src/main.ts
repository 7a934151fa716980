import { runService } from '@app/platform';
import { credentialsService } from './service.js';

await runService(credentialsService);
