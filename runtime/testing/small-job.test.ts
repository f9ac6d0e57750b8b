// The shared job checker fails a job in which a map has no winner: without that check, a map whose every attempt
// lost would leave its records expected nowhere, and every partition would read as correct.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MapResult, ShuffleClient } from '../client/shuffle-client.ts';
import { assertOneWinnerPerMap, readAndVerify, winnersOf, type SmallJob } from './small-job.ts';

const JOB: SmallJob = { maps: 3, partitions: 2, recordsPerPartition: 4 };

function result(outcome: MapResult['outcome']): MapResult {
  return { outcome, bytes: 128, records: 8 };
}

/** A client the checker must not reach: the winners are checked before any partition is read. */
const unreachable = new Proxy({} as ShuffleClient, {
  get: () => {
    throw new Error('the checker read partitions before checking the winners');
  },
});

describe('the shared job checker', () => {
  it('fails a job in which a map has no winning attempt', async () => {
    const winners = winnersOf(
      new Map([
        ['0/0', result('won')],
        ['1/0', result('lost')],
        ['1/1', result('lost')],
        ['2/0', result('won')],
      ]),
    );
    await assert.rejects(readAndVerify(unreachable, 0, JOB, winners), /map 1 has no winning attempt/);
  });

  it('fails a job in which a map has two winners, or a winner outside the job', () => {
    assert.throws(
      () =>
        winnersOf(
          new Map([
            ['0/0', result('won')],
            ['0/1', result('won')],
          ]),
        ),
      /map 0 has two winners/,
    );
    assert.throws(
      () =>
        assertOneWinnerPerMap(
          JOB,
          new Map([
            [0, 0],
            [1, 0],
            [2, 0],
            [3, 0],
          ]),
        ),
      /winners of maps outside 0\.\.2/,
    );
  });

  it('accepts exactly one winner per map', () => {
    const winners = winnersOf(
      new Map([
        ['0/0', result('won')],
        ['1/0', result('lost')],
        ['1/1', result('won')],
        ['2/0', result('won')],
      ]),
    );
    assertOneWinnerPerMap(JOB, winners);
    assert.deepEqual(
      [...winners],
      [
        [0, 0],
        [1, 1],
        [2, 0],
      ],
    );
  });
});
