import { DEFAULT_PORTS, runStandalone } from '@app/platform';
import { ssoService } from './index.js';

await runStandalone(ssoService, DEFAULT_PORTS.sso);
