import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalValue, REMOVED_KEY_MESSAGE, sameValue } from './config.ts';
import { commandAt, LEGACY_COMMANDS, LEGACY_RENAMES, renameAt } from './legacy.ts';
import { compareReleases } from './releases.ts';

const command = (path: string) => LEGACY_COMMANDS.find((c) => c.path === path)!;

describe('the expectations written from the contract', () => {
  it('orders releases numerically, patch included', () => {
    assert.ok(compareReleases('0.10.0', '0.9.9') > 0, "compareReleases('0.10.0', '0.9.9') > 0");
    assert.ok(compareReleases('0.5', '0.5.1') < 0, "compareReleases('0.5', '0.5.1') < 0");
    assert.equal(compareReleases('0.5', '0.5.0'), 0);
  });

  it('reads 4.4: /exclude POST with a form from 0.5.0, url-encoded from 0.5.1; /sendWorkerEvent POST only from 0.5.1', () => {
    assert.deepEqual(commandAt(command('/exclude'), '0.4.1'), {
      method: 'GET',
      form: false,
      mediaType: 'text/plain',
    });
    assert.deepEqual(commandAt(command('/exclude'), '0.5.0'), {
      method: 'POST',
      form: true,
      mediaType: 'text/plain',
    });
    assert.deepEqual(commandAt(command('/exclude'), '0.5.1'), {
      method: 'POST',
      form: true,
      mediaType: 'application/x-www-form-urlencoded',
    });
    assert.equal(commandAt(command('/sendWorkerEvent'), '0.5.0').method, 'GET');
    assert.equal(commandAt(command('/sendWorkerEvent'), '0.5.1').method, 'POST');
    assert.equal(commandAt(command('/exit'), '0.5.0').method, 'POST');
  });

  it('reads the renames of 4.4 at their releases', () => {
    const [shuffles, blacklisted] = LEGACY_RENAMES;
    assert.deepEqual(renameAt(shuffles!, '0.4.1'), { served: '/shuffles', notServed: '/shuffle' });
    assert.deepEqual(renameAt(shuffles!, '0.5.0'), { served: '/shuffle', notServed: '/shuffles' });
    assert.deepEqual(renameAt(blacklisted!, '0.2.1'), {
      served: '/blacklistedWorkers',
      notServed: '/excludedWorkers',
    });
  });

  it('compares configuration values across units and spellings', () => {
    assert.ok(sameValue('1min', '60s'), "sameValue('1min', '60s')");
    assert.ok(sameValue('30s', '30000ms'), "sameValue('30s', '30000ms')");
    assert.ok(!sameValue('30s', '30'), "!sameValue('30s', '30')");
    assert.ok(sameValue('0.70', '0.7'), "sameValue('0.70', '0.7')");
    assert.ok(sameValue('rocksdb', 'ROCKSDB'), "sameValue('rocksdb', 'ROCKSDB')");
    assert.equal(canonicalValue(' 2 '), '2');
  });

  it('requires a refusal to name the removed key and say it was removed', () => {
    const key = 'svc.worker.userResourceConsumption.update.interval';
    assert.match(`error: ${key} was removed in 0.4.0; delete the line`, REMOVED_KEY_MESSAGE(key));
    assert.doesNotMatch(`error: ${key} has a malformed value`, REMOVED_KEY_MESSAGE(key));
    assert.doesNotMatch(
      'error: svcXworker.userResourceConsumption.update.interval was removed',
      REMOVED_KEY_MESSAGE(key),
    );
  });
});
