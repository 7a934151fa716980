// The baseline: a bare Fastify route answering a record-sized JSON array, nothing else
// (no validation, auth, cache or database), in its own process like the services.
import Fastify from 'fastify';

const record = [
  {
    id: '00000000-0000-4000-8000-000000000000',
    name: 'Banana',
    price: 1.99,
    description: 'Yellow and sweet',
    stock: 120,
    category: 'Fruits',
    perishable: true,
    activated: true,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  },
];
const app = Fastify({ logger: false });
app.get('/record', async () => record);
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.stdout.write('ready\n');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
