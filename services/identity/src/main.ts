import { runService } from '@app/platform';
import { identityService } from './service.js';

await runService(identityService);
