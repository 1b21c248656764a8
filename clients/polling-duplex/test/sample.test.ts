import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { eventually, launchChromium, noChromium } from './support/browser.js';
import { repositoryRoot, startApp } from './support/host.js';

/** Where the sample's screenshots go: artifacts/ (never committed). */
const screenshots = join(repositoryRoot, 'artifacts', 'browser-tests');

describe('the sample chat page (samples/ChannelPool.PollingDuplex.SampleServer)', { skip: noChromium, timeout: 120_000 }, () => {
  let sample: Awaited<ReturnType<typeof startApp>>;
  let browser: Browser;
  before(async () => {
    sample = await startApp('samples/ChannelPool.PollingDuplex.SampleServer', ['--HttpPort=0', '--HttpsPort=0'], /^Chat page \(the browser client\): (\S+)$/);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await sample?.stop();
  });

  test('two people chat from two pages, one reloads mid-conversation, and each sees every message once, in order', async () => {
    const url = sample.match[1]!;
    const open = async (name: string): Promise<Page> => {
      const page = await (await browser.newContext({ viewport: { width: 760, height: 620 } })).newPage();
      await page.goto(url);
      await page.waitForSelector('body[data-ready="true"]');
      await page.fill('#name', name);
      return page;
    };
    const say = async (page: Page, text: string) => {
      await page.fill('#text', text);
      await page.click('button[type="submit"]');
    };
    const shown = (page: Page) => page.$$eval('#messages li:not(.notice)', items => items.map(li => `${li.querySelector('.from')?.textContent}: ${li.querySelector('.from + span')?.textContent}`));
    const expectShown = async (page: Page, count: number) => eventually(async () => (await shown(page)).length === count, `${count} messages shown`, 15_000, () => count);

    const alice = await open('Alice');
    const bob = await open('Bob');
    await say(alice, 'Hello Bob, this page is pushed to over HTTP long polling.');
    await expectShown(bob, 1);
    await say(bob, 'Hi Alice! No WebSocket needed.');
    await expectShown(alice, 2);

    // Bob reloads: his session resumes, and the history his tab kept shows each message once.
    await bob.reload();
    await bob.waitForSelector('body[data-ready="true"]');
    await say(alice, 'Did the reload lose anything?');
    await expectShown(bob, 3);
    await bob.fill('#name', 'Bob');
    await say(bob, 'Nothing lost, nothing twice.');
    await expectShown(alice, 4);
    await expectShown(bob, 4);

    const expected = [
      'Alice: Hello Bob, this page is pushed to over HTTP long polling.',
      'Bob: Hi Alice! No WebSocket needed.',
      'Alice: Did the reload lose anything?',
      'Bob: Nothing lost, nothing twice.',
    ];
    assert.deepEqual(await shown(alice), expected);
    assert.deepEqual(await shown(bob), expected);
    assert.match(await bob.textContent('#session') ?? '', /resumed after a reload/);
    assert.equal(await bob.textContent('#status'), 'connected');

    mkdirSync(screenshots, { recursive: true });
    await alice.screenshot({ path: join(screenshots, 'sample-chat-alice.png') });
    await bob.screenshot({ path: join(screenshots, 'sample-chat-bob.png') });
  });
});
