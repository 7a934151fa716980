import { runService } from '@app/platform';
import { healthService } from './service.js';

await runService(healthService);
