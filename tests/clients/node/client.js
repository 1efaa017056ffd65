// node-postgres with pg-cursor against a cellar gateway.
const { Client } = require('pg');
const Cursor = require('pg-cursor');

(async () => {
  const c = new Client({ connectionString: process.argv[2] });
  await c.connect();
  const r = await c.query('SELECT $1::int4 + 1 AS n, $2::text AS s', [41, 'hi']);
  if (r.rows[0].n !== 42 || r.rows[0].s !== 'hi') throw new Error('values ' + JSON.stringify(r.rows));
  const named = await c.query({ name: 'plus', text: 'SELECT $1::int8 * 2 AS d', values: [21] });
  if (named.rows[0].d !== '42') throw new Error('named ' + JSON.stringify(named.rows));
  // pg-cursor: Execute with a row limit, then Flush without Sync.
  const cursor = c.query(new Cursor('SHOW ALL'));
  const first = await cursor.read(5);
  const second = await cursor.read(5);
  if (first.length !== 5 || second.length !== 5 || first[0].name === second[0].name) throw new Error('cursor rows');
  await cursor.close();
  try {
    await c.query('SELECT 1/0');
    throw new Error('no error');
  } catch (e) {
    if (e.code !== '22012') throw e;
  }
  await c.end();
  console.log('ok');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
