// A chat room on the pub/sub service, with the browser client the server itself serves (MapPollingDuplexBrowserClient):
// no npm, no bundler. Each tab runs one session; a reload resumes it, and the history the tab has shown is kept in
// sessionStorage in the same task as each message is handed over, so after a reload every message shows exactly once.
import { PubSubClient } from '/_channelpool/polling-duplex/index.js';

const room = 'chat';
const list = document.getElementById('messages');
const status = document.getElementById('status');
const sessionLabel = document.getElementById('session');
const form = document.getElementById('compose');
const nameInput = document.getElementById('name');
const textInput = document.getElementById('text');
const history = JSON.parse(sessionStorage.getItem('chat:history') ?? '[]');
nameInput.value = sessionStorage.getItem('chat:name') ?? '';

function show(entry) {
  const item = document.createElement('li');
  if (entry.notice) {
    item.className = 'notice';
    item.textContent = entry.notice;
  } else {
    item.className = entry.from === nameInput.value ? 'mine' : '';
    const from = document.createElement('span');
    from.className = 'from';
    from.textContent = entry.from;
    const text = document.createElement('span');
    text.textContent = entry.text;
    const time = document.createElement('time');
    time.className = 'time';
    time.textContent = new Date(entry.at).toLocaleTimeString();
    item.append(from, text, time);
  }

  list.append(item);
  list.scrollTop = list.scrollHeight;
}

function remember(entry) {
  history.push(entry);
  sessionStorage.setItem('chat:history', JSON.stringify(history.slice(-200)));
  show(entry);
}

function setStatus(text, kind) {
  status.textContent = text;
  status.className = `badge ${kind}`;
}

history.forEach(show);
const chat = await PubSubClient.connect('/duplex');
const describe = () => {
  const session = chat.session;
  sessionLabel.textContent = `session ${session.id.slice(0, 8)}…${session.resumed ? ' (resumed after a reload)' : ''}`;
};
chat.addEventListener('message', e => remember(e.data));
chat.addEventListener('gap', e => remember({ notice: `${e.missed} messages were dropped while this tab was away.` }));
chat.addEventListener('reconnecting', () => setStatus('reconnecting…', 'reconnecting'));
chat.addEventListener('reconnected', () => setStatus('connected', 'connected'));
chat.addEventListener('reopened', () => {
  remember({ notice: 'The server lost this tab\'s session (a restart?); a new one joined the room. Messages sent meanwhile were missed.' });
  describe();
  setStatus('connected', 'connected');
});
chat.addEventListener('end', e => setStatus(e.error ? `disconnected: ${e.error.code}` : 'closed', 'failed'));
if (!chat.topics.has(room)) {
  await chat.subscribe(room);
}

describe();
setStatus('connected', 'connected');
form.addEventListener('submit', async event => {
  event.preventDefault();
  const text = textInput.value.trim();
  if (text === '') {
    return;
  }

  sessionStorage.setItem('chat:name', nameInput.value);
  textInput.value = '';
  try {
    await chat.publish(room, { from: nameInput.value, text, at: Date.now() }, { echo: true });
  } catch (error) {
    remember({ notice: `Not sent: ${error.message}` });
  }
});
document.body.dataset.ready = 'true';
