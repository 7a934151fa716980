export { buildPlatform, startPlatform, type Platform, type PlatformOptions } from './platform.js';
