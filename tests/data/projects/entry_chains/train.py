import sys

from chains.report import upload_report
from chains.trainer import Trainer


def main():
    t = Trainer()
    t.evaluate()
    if not t.ok:
        sys.exit(2)
    try:
        t.fit()
    finally:
        upload_report()


if __name__ == "__main__":
    main()
