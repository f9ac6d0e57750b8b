import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyApplications, type ApplicationRegistry } from './applications.ts';
import { expiredDfsDirs } from './dfs-dirs.ts';

function registry(...appIds: string[]): ApplicationRegistry {
  return {
    ...emptyApplications(),
    apps: new Map(appIds.map((appId) => [appId, { lastHeartbeat: 0, shuffles: [0] }])),
  };
}

describe('expired DFS directories', () => {
  it('are the shuffle directories of applications the master no longer has, and nothing else', () => {
    const names = ['app-1-0', 'app-1-3', 'app-2-0', 'app-gone-7', 'lost+found', 'notes.txt', 'x-y'];
    assert.deepEqual(expiredDfsDirs(names, registry('app-1', 'app-2')), ['app-gone-7']);
    assert.deepEqual(expiredDfsDirs(names, registry()), ['app-1-0', 'app-1-3', 'app-2-0', 'app-gone-7']);
  });
});
