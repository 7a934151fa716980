import { runService } from '@app/platform';
import { ssoService } from './service.js';

await runService(ssoService);
