# JAX: a jitted MLP training step on random data (XLA launches its kernels itself; no PyTorch).
# STEPS (default 200). Prints "loop_s X".
import os, time
import jax
import jax.numpy as jnp

def init(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (a, b)) * 0.02, jnp.zeros(b)) for k, a, b in zip(keys, sizes[:-1], sizes[1:])]

def loss_fn(params, x, y):
    for w, b in params[:-1]:
        x = jax.nn.gelu(x @ w + b)
    w, b = params[-1]
    return jnp.mean((x @ w + b - y) ** 2)

@jax.jit
def step(params, x, y):
    grads = jax.grad(loss_fn)(params, x, y)
    return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, grads)]

def main():
    steps = int(os.environ.get("STEPS", "200"))
    key = jax.random.PRNGKey(0)
    params = init(key, [1024, 4096, 4096, 1024])
    x = jax.random.normal(key, (512, 1024))
    y = jax.random.normal(key, (512, 1024))
    for _ in range(3):
        params = step(params, x, y)
    jax.block_until_ready(params)
    t0 = time.perf_counter()
    for _ in range(steps):
        params = step(params, x, y)
    jax.block_until_ready(params)
    print("loop_s %.3f" % (time.perf_counter() - t0))

if __name__ == "__main__":
    main()
