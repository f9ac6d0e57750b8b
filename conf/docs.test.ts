import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { renderConfigurationDocs } from './docs.ts';
import { REGISTRY } from './registry/registry.ts';

const DOCS = new URL('../docs/configuration.md', import.meta.url);

describe('docs/configuration.md', () => {
  it('is what `svc conf docs` generates from the registry today (run `npx svc conf docs` when this fails)', () => {
    assert.equal(readFileSync(DOCS, 'utf8'), renderConfigurationDocs());
  });

  it('documents every key and every row of the contract’s table', () => {
    const text = renderConfigurationDocs();
    for (const entry of REGISTRY.entries) assert.ok(text.includes(`\`${entry.template}\``), entry.template);
    assert.match(text, /\| 0\.3\.2 \| raft\.client\.rpc\.request\.timeout \|/);
    assert.match(
      text,
      /`svc\.master\.slot\.assign\.extraSlots` \| int of at least 0 \| `100` \(before 0\.6\.0: `2`\)/,
    );
  });
});
