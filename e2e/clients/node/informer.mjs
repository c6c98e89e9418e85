// The official JavaScript client's informer (makeInformer) on one namespace's ConfigMaps,
// through the proxy. Prints a JSON line per informer event ({event, name, rv, n}), then
// {"ready": true} once the first list is in. Reads commands on stdin: "dump" prints the
// informer's cache ({cache: [{name, rv, n}]}), "quit" stops it.
// Usage: node informer.mjs NAMESPACE   (KUBECONFIG points at the proxy)
import * as readline from 'node:readline';
import * as k8s from '@kubernetes/client-node';

const namespace = process.argv[2];
const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const api = kc.makeApiClient(k8s.CoreV1Api);
const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${namespace}/configmaps`, () =>
  api.listNamespacedConfigMap({ namespace }),
);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const brief = (o) => ({ name: o.metadata.name, rv: o.metadata.resourceVersion, n: o.data?.n ?? null });
for (const event of ['add', 'update', 'delete']) {
  informer.on(event, (o) => out({ event, ...brief(o) }));
}
// The informer stops on a watch error it does not retry itself; start it again, as
// controllers built on it do.
informer.on('error', (err) => {
  out({ error: String(err?.message ?? err) });
  setTimeout(() => informer.start(), 200);
});
await informer.start();
out({ ready: true });
readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  if (line === 'dump') out({ cache: informer.list(namespace).map(brief) });
  if (line === 'quit') {
    await informer.stop();
    process.exit(0);
  }
});
