from django.core.wsgi import get_wsgi_application

from config import env

env.use_settings_module()
application = get_wsgi_application()
