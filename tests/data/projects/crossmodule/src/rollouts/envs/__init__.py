from .plain import PlainEnv
from .sandbox import SandboxEnv as SandboxEnv
