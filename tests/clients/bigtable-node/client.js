// Writes and reads through cellar's Bigtable API with Google's Node client
// (@google-cloud/bigtable), the way a program written for Cloud Bigtable
// would, against BIGTABLE_EMULATOR_HOST. Every answer is checked here; the
// script prints "ok" at the end and exits non-zero on the first mismatch.
'use strict';

const assert = require('node:assert/strict');
const {Bigtable} = require('@google-cloud/bigtable');

async function main() {
  if (!process.env.BIGTABLE_EMULATOR_HOST) {
    throw new Error('BIGTABLE_EMULATOR_HOST is not set');
  }
  const bigtable = new Bigtable({projectId: 'cellar-test'});
  const table = bigtable.instance('node').table(process.argv[2] || 'node_t');

  // Admin: a table with two families, one keeping two versions.
  // Split keys as Buffers: this client version fails to serialize strings.
  await table.create({families: ['cf', {name: 'hist', rule: {versions: 2}}], splits: [Buffer.from('m')]});
  const [exists] = await table.exists();
  assert.equal(exists, true, 'table exists after create');
  const [families] = await table.getFamilies();
  assert.deepEqual(families.map(f => f.id).sort(), ['cf', 'hist']);

  // Writes: a batch across both tablets, then single-row mutations.
  const rows = [];
  for (let i = 0; i < 20; i++) {
    const key = `user${String(i).padStart(2, '0')}`;
    rows.push({key, data: {cf: {name: `n${i}`, city: i % 2 ? 'Seoul' : 'Oslo'}}});
  }
  rows.push({key: 'zeta', data: {cf: {name: 'z'}}});
  await table.insert(rows);

  // Point read of one row, all its cells.
  const [row] = await table.row('user07').get();
  assert.equal(row.data.cf.name[0].value, 'n7');
  assert.equal(row.data.cf.city[0].value, 'Seoul');

  // A prefix scan with a filter: only the city column, Oslo rows.
  const [oslo] = await table.getRows({
    prefix: 'user',
    filter: [{column: 'city'}, {value: 'Oslo'}],
  });
  assert.equal(oslo.length, 10, 'rows of Oslo');
  for (const r of oslo) {
    assert.deepEqual(Object.keys(r.data.cf), ['city']);
  }

  // A range with a limit, in key order across the split at "m".
  const [some] = await table.getRows({ranges: [{start: 'user05', end: 'zzz'}], limit: 3});
  assert.deepEqual(some.map(r => r.id), ['user05', 'user06', 'user07']);
  const [all] = await table.getRows();
  assert.equal(all.length, 21);
  assert.equal(all[20].id, 'zeta');

  // Versions: two writes to a column of "hist", newest first.
  const h = table.row('user01');
  await h.save({hist: {v: {value: 'old', timestamp: 1000000000}}});
  await h.save({hist: {v: {value: 'new', timestamp: 2000000000}}});
  const [hist] = await h.get(['hist:v']); // with columns, get resolves to the row's data
  assert.deepEqual(hist.hist.v.map(c => c.value), ['new', 'old']);
  const [latest] = await h.get({filter: [{column: {cellLimit: 1}}]});
  assert.deepEqual(latest.data.hist.v.map(c => c.value), ['new']);

  // Read-modify-write: increment (8-byte big-endian) and append.
  const counter = table.row('counter');
  await counter.increment('cf:n', 5);
  const [afterInc] = await counter.increment('cf:n', 2);
  assert.equal(afterInc, 7);
  await counter.createRules([{column: 'cf:log', append: 'a'}]);
  await counter.createRules([{column: 'cf:log', append: 'b'}]);
  const [log] = await counter.get(['cf:log']);
  assert.equal(log.cf.log[0].value, 'ab');

  // Check-and-mutate: a predicate that matches, then one that does not.
  const [matched] = await table.row('user03').filter([{column: 'city'}, {value: 'Seoul'}], {
    onMatch: [{method: 'insert', data: {cf: {flag: 'seoul'}}}],
    onNoMatch: [{method: 'insert', data: {cf: {flag: 'other'}}}],
  });
  assert.equal(matched, true);
  const [unmatched] = await table.row('user04').filter([{column: 'city'}, {value: 'Seoul'}], {
    onMatch: [{method: 'insert', data: {cf: {flag: 'seoul'}}}],
    onNoMatch: [{method: 'insert', data: {cf: {flag: 'other'}}}],
  });
  assert.equal(unmatched, false);
  const [flagged] = await table.getRows({keys: ['user03', 'user04'], filter: {column: 'flag'}});
  assert.deepEqual(flagged.map(r => [r.id, r.data.cf.flag[0].value]), [['user03', 'seoul'], ['user04', 'other']]);

  // Deletes: one cell, one row.
  await table.row('user05').deleteCells(['cf:city']);
  const [u5] = await table.row('user05').get();
  assert.deepEqual(Object.keys(u5.data.cf), ['name']);
  await table.row('user06').delete();
  const [u6exists] = await table.row('user06').exists();
  assert.equal(u6exists, false);

  // SampleRowKeys: the table's tablets end at "m" and at its end.
  const [samples] = await table.sampleRowKeys();
  assert.ok(samples.length >= 1, 'some sample keys');

  // DropRowRange by prefix.
  await table.deleteRows('user1');
  const [left] = await table.getRows({prefix: 'user'});
  assert.equal(left.length, 9, 'user0x rows left but user06');

  await table.delete();
  const [gone] = await table.exists();
  assert.equal(gone, false);
  console.log('ok');
}

main().then(() => process.exit(0), err => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
