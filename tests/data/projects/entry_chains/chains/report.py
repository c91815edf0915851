def push():
    pass


def upload_report():
    try:
        push()
    except KeyboardInterrupt:  # flagged: the last statement of main() (its finally)
        print("upload skipped")


def retry_upload():
    try:
        push()
    except KeyboardInterrupt:  # near miss: called in a loop that goes on
        print("retry skipped")


def upload_or_fail():
    try:
        push()
    except KeyboardInterrupt:  # near miss: its caller raises afterwards
        print("upload interrupted")
