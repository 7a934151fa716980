export { buildPlatform, PLATFORM_CONFIG, startPlatform, type Platform, type PlatformConfig, type PlatformOptions } from './platform.js';
